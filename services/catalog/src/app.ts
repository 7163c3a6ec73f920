import { createSubjectService, type ServiceDeps, type ServiceInstance } from '@pcp/service-kit';

/**
 * The catalog service (CatalogSet ingest and retrieval). It joins the platform now so that readiness,
 * deployment and scaling cover it; its subjects arrive with its own issue.
 */
export function createCatalogService(deps: ServiceDeps): ServiceInstance {
  return createSubjectService(deps, { name: 'catalog', version: '0.1.0' }, []);
}
