import { createSubjectService, type ServiceDeps, type ServiceInstance } from '@pcp/service-kit';

/**
 * The ordering service (validate and place orders, order status). It joins the platform now so that readiness,
 * deployment and scaling cover it; its subjects arrive with its own issue.
 */
export function createOrderingService(deps: ServiceDeps): ServiceInstance {
  return createSubjectService(deps, { name: 'ordering', version: '0.1.0' }, []);
}
