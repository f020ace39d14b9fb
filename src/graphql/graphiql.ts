/**
 * GraphiQL's page, whole: its script, styles and the Monaco editor's three workers are inlined,
 * so the page works offline and asks no third party for anything. Yoga's default page loads them
 * from unpkg.com, which leaves GraphiQL on "Loading…" without internet and tells a CDN who uses it.
 *
 * Library: `@graphql-yoga/render-graphiql`, Yoga's own offline renderer (same version as
 * graphql-yoga, so the same GraphiQL build and options; no install scripts). Copying the assets
 * into the repository or serving them from node_modules on routes of our own would be our code to
 * keep in step with Yoga's; this is one option of createYoga (`renderGraphiQL`).
 *
 * The module is ~9 MB of JavaScript: it is imported on the first GraphiQL request, so production
 * (GraphiQL off) never loads it, and the page (~9 MB of HTML) is built once per set of options
 * rather than on every request.
 */
import type { GraphiQLOptions } from 'graphql-yoga';

const pages = new Map<string, Promise<string>>();

/**
 * Yoga's `renderGraphiQL`: the HTML of GraphiQL with every asset inlined, for `options` (title,
 * subscriptions protocol, … as Yoga's `graphiql` option gives them).
 */
export function renderOfflineGraphiQL(options: GraphiQLOptions): Promise<string> {
  const key = JSON.stringify(options);
  let page = pages.get(key);
  if (!page) {
    page = import('@graphql-yoga/render-graphiql').then(({ renderGraphiQL }) => renderGraphiQL(options));
    // A failed import is not cached: the next request tries again.
    page.catch(() => pages.delete(key));
    pages.set(key, page);
  }
  return page;
}
