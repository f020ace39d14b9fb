/**
 * The page's calls to Signet: the slug-authenticated GraphQL operations and the upload endpoint of
 * docs/signing-form.md. Same origin only: URLs the server hands out are reduced to path + query,
 * so the page never talks to another origin even when APP_URL names another host.
 */
import { framed } from './embed.ts';
import { pageLanguage } from './i18n.ts';
import type { FieldValues, SigningForm, UploadedAttachment } from './types.ts';

const FORM_SELECTION = `
  slug state message waitingFor accountName
  submitter { id uuid name email phone role status openedAt completedAt declinedAt }
  submission { id name templateName status order expireAt }
  documents { uuid name url pages { width height } }
  fields {
    uuid name type required readonly own role title description
    areas { attachmentUuid page x y w h optionUuid cellW }
    options { uuid value }
    conditions { field_uuid: fieldUuid value action operation }
    preferences validation defaultValue value
    attachments { uuid url filename contentType }
  }
  completedDocuments { name url }
  completedRedirectUrl goToLast
  consent(language: ${JSON.stringify(pageLanguage)}) { text version acceptedAt acceptedVersion }
`;

/**
 * The form, and in a frame also `eventDetail`: the submitter as the page's `load`, `completed` and
 * `declined` events carry it to the host (./embed.ts; docs/embedding.md). Outside a frame it is not
 * asked for: it costs the server a few reads.
 */
const EVENT_SELECTION = framed ? `${FORM_SELECTION} eventDetail` : FORM_SELECTION;

/** A form with the event detail when it was asked for (EVENT_SELECTION). */
export type SigningFormAnswer = SigningForm & { eventDetail?: unknown };

/** A refusal from the server: its message, code and, for a field's problem, the field's uuid. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    message: string,
    readonly code?: string,
    readonly fieldUuid?: string,
    /** Every error of the answer (the first is this one). */
    readonly all: { message: string; fieldUuid?: string }[] = [],
  ) {
    super(message);
  }
}

interface GraphQLAnswer<T> {
  data?: T | null;
  errors?: { message: string; extensions?: { code?: string; fieldUuid?: string } }[];
}

async function callGraphQL<T>(
  query: string,
  variables: Record<string, unknown>,
  init: { keepalive?: boolean } = {},
): Promise<T> {
  let response: Response;
  try {
    response = await fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
      body: JSON.stringify({ query, variables }),
      keepalive: init.keepalive ?? false,
    });
  } catch {
    throw new ApiError('The server cannot be reached. Check your connection and try again.', 'NETWORK');
  }
  let body: GraphQLAnswer<T>;
  try {
    body = (await response.json()) as GraphQLAnswer<T>;
  } catch {
    throw new ApiError(`The server answered ${response.status}. Please try again.`, 'HTTP');
  }
  const errors = body.errors ?? [];
  if (errors.length > 0 || !body.data) {
    const first = errors[0];
    throw new ApiError(
      first?.message ?? 'The server gave no answer.',
      first?.extensions?.code,
      first?.extensions?.fieldUuid,
      errors.map((e) => ({ message: e.message, fieldUuid: e.extensions?.fieldUuid })),
    );
  }
  return body.data;
}

/** Loads the form and records the view (`view_form`). */
export async function openSigningForm(slug: string): Promise<SigningFormAnswer> {
  const data = await callGraphQL<{ openSigningForm: SigningFormAnswer }>(
    `mutation OpenSigningForm($slug: String!) { openSigningForm(slug: $slug) { ${EVENT_SELECTION} } }`,
    { slug },
  );
  return data.openSigningForm;
}

/** Records that the page was opened from a request email's link (`?t=`); errors are the caller's to ignore. */
export async function recordEmailClick(slug: string, t: string): Promise<void> {
  await callGraphQL<{ recordEmailClick: boolean }>(
    `mutation RecordEmailClick($slug: String!, $t: String!) { recordEmailClick(slug: $slug, t: $t) }`,
    { slug, t },
  );
}

/** Reads the form without recording anything (polling for the signed copies). */
export async function fetchSigningForm(slug: string): Promise<SigningForm> {
  const data = await callGraphQL<{ signingForm: SigningForm }>(
    `query SigningForm($slug: String!) { signingForm(slug: $slug) { ${FORM_SELECTION} } }`,
    { slug },
  );
  return data.signingForm;
}

/**
 * Records that the signer agreed to sign electronically to the disclosure of `version`
 * (SigningForm.consent.version); resolves to that version.
 * @throws ApiError with the server's message (a version no longer current, a closed form)
 */
export async function acceptSigningConsent(slug: string, version: string): Promise<string> {
  const data = await callGraphQL<{ acceptSigningConsent: { consent: { acceptedVersion: string | null } } }>(
    'mutation AcceptSigningConsent($slug: String!, $version: String!) { ' +
      'acceptSigningConsent(slug: $slug, version: $version) { consent { acceptedVersion } } }',
    { slug, version },
  );
  return data.acceptSigningConsent.consent.acceptedVersion ?? version;
}

/** Saves values (merged into the saved ones). `keepalive` lets it finish while the page unloads. */
export async function saveSigningFormValues(
  slug: string,
  values: FieldValues,
  init: { keepalive?: boolean } = {},
): Promise<SigningForm> {
  const data = await callGraphQL<{ saveSigningFormValues: SigningForm }>(
    'mutation SaveSigningFormValues($slug: String!, $values: JSON!) { ' +
      `saveSigningFormValues(slug: $slug, values: $values) { ${FORM_SELECTION} } }`,
    { slug, values },
    init,
  );
  return data.saveSigningFormValues;
}

/** Saves the values and completes the form. */
export async function completeSigningForm(slug: string, values: FieldValues): Promise<SigningFormAnswer> {
  const data = await callGraphQL<{ completeSigningForm: SigningFormAnswer }>(
    'mutation CompleteSigningForm($slug: String!, $values: JSON) { ' +
      `completeSigningForm(slug: $slug, values: $values) { ${EVENT_SELECTION} } }`,
    { slug, values },
  );
  return data.completeSigningForm;
}

/** Declines with a reason. */
export async function declineSigningForm(slug: string, reason: string): Promise<SigningFormAnswer> {
  const data = await callGraphQL<{ declineSigningForm: SigningFormAnswer }>(
    'mutation DeclineSigningForm($slug: String!, $reason: String!) { ' +
      `declineSigningForm(slug: $slug, reason: $reason) { ${EVENT_SELECTION} } }`,
    { slug, reason },
  );
  return data.declineSigningForm;
}

/**
 * Starts signing a shared template (`/d/{slug}`) as the given signer: the signer's own form's slug
 * (a new submission, or the one this signer started before).
 * @param input StartTemplateFormInput: email, name, role, externalId, values, readonlyFields,
 *   metadata, sendCopyEmail, completedRedirectUrl
 * @throws ApiError with the server's message ("email is invalid", "Too many attempts.", …)
 */
export async function startTemplateForm(templateSlug: string, input: Record<string, unknown>): Promise<string> {
  const data = await callGraphQL<{ startTemplateForm: { slug: string } }>(
    'mutation StartTemplateForm($slug: String!, $input: StartTemplateFormInput!) { ' +
      'startTemplateForm(slug: $slug, input: $input) { slug } }',
    { slug: templateSlug, input },
  );
  return data.startTemplateForm.slug;
}

/**
 * Uploads a file for a field (POST /api/attachments, multipart). The slug and type go before the
 * file, so a streaming reader has them when the file arrives.
 * @throws ApiError with the server's message (`File type '.exe' is not allowed.`, a size limit…)
 */
export async function uploadAttachment(
  slug: string,
  file: Blob,
  filename: string,
  type: 'signature' | 'initials' | 'image' | 'file',
): Promise<UploadedAttachment> {
  const form = new FormData();
  form.append('submitter_slug', slug);
  form.append('type', type);
  form.append('file', file, filename);
  return postAttachment(form);
}

/**
 * Sends a typed signature or initials as its text (POST /api/attachments with `typed_text`): the
 * server renders it in the script font and answers as for an uploaded image.
 * @throws ApiError with the server's message ("signature is empty", …)
 */
export function uploadTypedSignature(
  slug: string,
  text: string,
  type: 'signature' | 'initials',
): Promise<UploadedAttachment> {
  const form = new FormData();
  form.append('submitter_slug', slug);
  form.append('type', type);
  form.append('typed_text', text);
  return postAttachment(form);
}

async function postAttachment(form: FormData): Promise<UploadedAttachment> {
  let response: Response;
  try {
    response = await fetch('/api/attachments', { method: 'POST', body: form });
  } catch {
    throw new ApiError('The upload did not reach the server. Check your connection and try again.', 'NETWORK');
  }
  const body = (await response.json().catch(() => ({}))) as Partial<UploadedAttachment> & {
    error?: string;
    message?: string;
  };
  if (!response.ok) {
    const fallback = response.status === 413 ? 'The file is too large.' : `The upload failed (${response.status}).`;
    throw new ApiError(body.error ?? body.message ?? fallback, String(response.status));
  }
  return body as UploadedAttachment;
}

/** A URL from the server as a path on this origin (the page makes no cross-origin requests). */
export function sameOriginUrl(url: string): string {
  const parsed = new URL(url, window.location.href);
  return `${parsed.pathname}${parsed.search}`;
}
