/** Every DocuSeal REST route Signet serves, in one list. */
import type { RestRoute } from './gateway.ts';
import { signingFormRoutes } from './routes/signing-form.ts';
import { submissionReadRoutes, submissionRoutes } from './routes/submissions.ts';
import { templateRoutes, templateWriteRoutes } from './routes/templates.ts';
import { userRoutes } from './routes/user.ts';

export const restRoutes: RestRoute[] = [
  ...userRoutes,
  ...templateRoutes,
  ...templateWriteRoutes,
  ...submissionRoutes,
  ...submissionReadRoutes,
  ...signingFormRoutes,
];
export { registerRestGateway, type RestRoute } from './gateway.ts';
