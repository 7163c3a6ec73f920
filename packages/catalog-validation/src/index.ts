export {
  validateCatalogSet,
  type ValidatedCatalogSet,
  type ValidationContext,
  type ValidationResult,
} from './validate-catalog-set.js';
