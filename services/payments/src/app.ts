import { createSubjectService, type ServiceDeps, type ServiceInstance } from '@pcp/service-kit';

/**
 * The payments service (card vaulting and charges through the processor). It joins the platform now so that readiness,
 * deployment and scaling cover it; its subjects arrive with its own issue.
 */
export function createPaymentsService(deps: ServiceDeps): ServiceInstance {
  return createSubjectService(deps, { name: 'payments', version: '0.1.0' }, []);
}
