/**
 * `GET /`: what answers here, for someone who has just started Signet and opens its address. JSON
 * naming the service and its version (from package.json) with links to the GraphQL endpoint,
 * GraphiQL (only when it is on: not in production), the REST API's base and /health, and where
 * the documentation is. A browser (Accept: text/html first) gets the same as a small page.
 *
 * The docs are paths in Signet's repository (README.md, docs/, schema.graphql; also under /app in
 * the Docker image): the service has no public documentation site to link to, and serves no
 * Markdown. Links are paths from the service's root, so they hold behind a proxy whatever
 * APP_URL says. No library: one fixed object and a dozen lines of HTML with nothing from the request.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { GRAPHQL_PATH } from '../graphql/server.ts';
import { PROJECT_ROOT } from '../paths.ts';
import { wantsHtml } from './errors.ts';

/** The body of `GET /` (as JSON). */
export interface ServiceIndex {
  service: 'Signet';
  description: string;
  /** package.json's version. */
  version: string;
  /** Paths on this service. */
  links: { graphql: string; graphiql?: string; api: string; health: string };
  /** Paths in Signet's repository. */
  docs: { readme: string; pages: string; graphqlSchema: string };
}

/**
 * Registers `GET /` (and HEAD).
 * @param options.graphiql whether GraphiQL is served (config.graphiql): only then is it linked
 */
export function registerServiceIndexRoute(app: FastifyInstance, options: { graphiql: boolean }): void {
  const index = describeService(options);
  const html = renderIndexPage(index);
  app.get('/', async (request, reply) => {
    if (wantsHtml(request)) return reply.type('text/html; charset=utf-8').send(html);
    return reply.send(index);
  });
}

function describeService(options: { graphiql: boolean }): ServiceIndex {
  const manifest = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    version: string;
    description: string;
  };
  return {
    service: 'Signet',
    // "Signet: a document-signing service …" → "A document-signing service …"
    description: manifest.description.replace(/^Signet: (.)/, (_, first: string) => first.toUpperCase()),
    version: manifest.version,
    links: {
      graphql: GRAPHQL_PATH,
      ...(options.graphiql ? { graphiql: GRAPHQL_PATH } : {}),
      api: '/api',
      health: '/health',
    },
    docs: { readme: 'README.md', pages: 'docs/', graphqlSchema: 'schema.graphql' },
  };
}

function renderIndexPage(index: ServiceIndex): string {
  const link = (href: string, text: string) => `<li><a href="${href}">${text}</a></li>`;
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, ` +
    `initial-scale=1">` +
    `<title>Signet ${index.version}</title></head><body><main><h1>Signet ${index.version}</h1><p>` +
    `${index.description}.</p><ul>` +
    (index.links.graphiql ? link(index.links.graphiql, 'GraphiQL (GraphQL in the browser)') : '') +
    `<li>GraphQL endpoint: <code>POST ${index.links.graphql}</code></li>` +
    // /api itself is no route (404): the page names it rather than linking to it.
    `<li>REST API (DocuSeal-compatible) under <code>${index.links.api}</code>, e.g. <code>GET ${index.links.api}` +
    `/templates</code> with an <code>X-Auth-Token</code> header</li>` +
    link(index.links.health, 'Health') +
    `</ul><p>Documentation: <code>${index.docs.readme}</code>, <code>${index.docs.pages}</code> and <code>` +
    `${index.docs.graphqlSchema}</code> in Signet's repository.</p></main></body></html>`
  );
}
