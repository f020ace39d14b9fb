/** Every DocuSeal REST route Signet serves, in one list. */
import type { RestRoute } from './gateway.ts';
import { submissionRoutes } from './routes/submissions.ts';
import { templateRoutes, templateWriteRoutes } from './routes/templates.ts';
import { userRoutes } from './routes/user.ts';

export const restRoutes: RestRoute[] = [...userRoutes, ...templateRoutes, ...templateWriteRoutes, ...submissionRoutes];
export { registerRestGateway, type RestRoute } from './gateway.ts';
