/**
 * DocuSeal's public signing-form routes that are plain JSON (reference/docuseal-behaviour.md
 * §1.1; no API key, the `submitter_slug` is the capability):
 * `POST /api/submitter_form_views {submitter_slug}` → `{}`, the same as the openSigningForm
 * mutation (a view_form event, opened_at, form.viewed on the first open);
 * `POST /api/submitter_email_clicks {submitter_slug, t}` → `{}`, a `click_email` event when `t` is the
 * signer's link tag (src/signing-form/email-clicks.ts). An unknown or missing slug is a 404. The
 * multipart upload route (POST /api/attachments) is rest-compat/routes/attachments.ts.
 */
import type { RestRoute } from '../gateway.ts';

const slugOf = (body: unknown): string => {
  const slug = body && typeof body === 'object' ? (body as { submitter_slug?: unknown }).submitter_slug : undefined;
  return typeof slug === 'string' ? slug : '';
};

export const signingFormRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/submitter_form_views',
    public: true,
    operation: /* GraphQL */ `
      mutation RestSubmitterFormView($slug: String!) {
        openSigningForm(slug: $slug) { slug }
      }
    `,
    variables: ({ body }) => ({ slug: slugOf(body) }),
    serialize: () => ({}),
  },
  {
    method: 'POST',
    path: '/submitter_email_clicks',
    public: true,
    operation: /* GraphQL */ `
      mutation RestSubmitterEmailClick($slug: String!, $t: String!) {
        recordEmailClick(slug: $slug, t: $t)
      }
    `,
    variables: ({ body }) => {
      const t = body && typeof body === 'object' ? (body as { t?: unknown }).t : undefined;
      return { slug: slugOf(body), t: typeof t === 'string' ? t : '' };
    },
    serialize: () => ({}),
  },
];
