/**
 * The REST API's error responses: DocuSeal's statuses and bodies for AppError codes
 * (src/http/error-bodies.ts, shared with the service's own routes).
 */
export {
  INTERNAL_ERROR,
  type RestErrorResponse,
  restErrorFor,
  ROUTE_NOT_FOUND,
  sendRestError,
} from '../src/http/error-bodies.ts';
