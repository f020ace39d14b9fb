/** Every DocuSeal REST route Signet serves, in one list. */
import type { RestRoute } from './gateway.ts';
import { templateRoutes, templateWriteRoutes } from './routes/templates.ts';
import { userRoutes } from './routes/user.ts';

export const restRoutes: RestRoute[] = [...userRoutes, ...templateRoutes, ...templateWriteRoutes];
export { registerRestGateway, type RestRoute } from './gateway.ts';
