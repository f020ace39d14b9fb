/** Every DocuSeal REST route Signet serves, in one list. */
import type { RestRoute } from './gateway.ts';
import { userRoutes } from './routes/user.ts';

export const restRoutes: RestRoute[] = [...userRoutes];
export { registerRestGateway, type RestRoute } from './gateway.ts';
