/**
 * Signature-request messages: DocuSeal's email variables (docuseal-behaviour.md §7.4), default
 * subject and body, the custom-body link rule (§14.10) and the SMS text.
 */
import { describe, expect, it } from 'vitest';
import {
  requestSubject,
  buildSignatureRequestEmail,
  buildSignatureRequestSms,
  renderTemplateText,
  type MessageVariables,
} from '../src/notifications/message-templates.ts';

const LINK = 'http://localhost:3000/s/Zx9kQ2mB7v';

function variables(overrides: Partial<MessageVariables> = {}): MessageVariables {
  const submitter = {
    id: 41,
    slug: 'Zx9kQ2mB7v',
    email: 'ann.lee@example.test',
    name: 'Ann Lee',
    phone: '+14155550100',
    link: LINK,
    values: { Company: 'Lee & Sons', Tags: ['a', 'b'] },
  };
  return {
    account: { name: 'Acme Corp' },
    template: { id: 7, name: 'NDA' },
    submission: {
      id: 301,
      name: null,
      link: 'http://localhost:3000/submissions/301',
      expireAt: new Date('2026-11-05T14:05:00Z'),
      submitters: [submitter, { id: 42, email: 'bob@example.test', name: null, values: { Title: 'CTO' } }],
    },
    submitter,
    sender: { firstName: 'Sam', lastName: 'Sender', email: 'sam+api@acme.test' },
    documentsLink: 'http://localhost:3000/e/preview',
    ...overrides,
  };
}

describe('renderTemplateText', () => {
  it('fills every variable of §7.4 we can fill', () => {
    const cases: Record<string, string> = {
      '{{template.name}}': 'NDA',
      '{{template.id}}': '7',
      '{{submission.name}}': 'NDA',
      '{{submission.id}}': '301',
      '{{submission.link}}': 'http://localhost:3000/submissions/301',
      '{{submission.expire_at}}': '05 Nov 14:05',
      '{{submitter.link}}': LINK,
      '{{submitter.email}}': 'ann.lee@example.test',
      '{{submitter.name}}': 'Ann Lee',
      '{{submitter.first_name}}': 'Ann',
      '{{submitter.id}}': '41',
      '{{submitter.slug}}': 'Zx9kQ2mB7v',
      '{{submitter.Company}}': 'Lee & Sons',
      '{{submitter.Tags}}': 'a, b',
      '{{submitters}}': 'Ann Lee, bob@example.test',
      '{{submission.submitters}}': 'Ann Lee, bob@example.test',
      '{{submitters[1].name}}': 'Ann Lee',
      '{{submitters[2].email}}': 'bob@example.test',
      '{{submitters[1].first_name}}': 'Ann',
      '{{submitters[2].Title}}': 'CTO',
      '{{account.name}}': 'Acme Corp',
      '{{sender.name}}': 'Sam Sender',
      '{{sender.first_name}}': 'Sam',
      '{{sender.email}}': 'sam@acme.test',
      '{{documents.link}}': 'http://localhost:3000/e/preview',
      '{{documents.links}}': 'http://localhost:3000/e/preview',
    };
    for (const [text, expected] of Object.entries(cases)) {
      expect(renderTemplateText(text, variables()), text).toBe(expected);
    }
  });

  it('takes single or double braces in any case; leaves unknown names; empties known ones without a value', () => {
    const v = variables({ sender: null, documentsLink: null });
    expect(renderTemplateText('Sign {template.name} at {{SUBMITTER.LINK}}', v)).toBe(`Sign NDA at ${LINK}`);
    expect(renderTemplateText('{{unknown.thing}} and {not a variable} stay', v)).toBe(
      '{{unknown.thing}} and {not a variable} stay',
    );
    expect(
      renderTemplateText('[{{sender.name}}][{{documents.link}}][{{submitter.Nope}}][{{submitters[9].email}}]', v),
    ).toBe('[][][][]');
  });

  it('submitter.name falls back to the email, then the phone; submission.name is its own when set', () => {
    const v = variables();
    expect(renderTemplateText('{{submitter.name}}', { ...v, submitter: { ...v.submitter, name: null } })).toBe(
      'ann.lee@example.test',
    );
    expect(
      renderTemplateText('{{submitter.name}}', { ...v, submitter: { ...v.submitter, name: null, email: null } }),
    ).toBe('+14155550100');
    expect(renderTemplateText('{{submission.name}}', { ...v, submission: { ...v.submission, name: 'Q4 NDA' } })).toBe(
      'Q4 NDA',
    );
  });

  it('does not expand a value that looks like a variable', () => {
    const v = variables();
    const sneaky = { ...v, submitter: { ...v.submitter, name: '{{account.name}}' } };
    expect(renderTemplateText('{{submitter.name}} / {{account.name}}', sneaky)).toBe('{{account.name}} / Acme Corp');
  });

  it('prints expire_at in the given time zone', () => {
    expect(renderTemplateText('{{submission.expire_at}}', { ...variables(), timeZone: 'America/New_York' })).toBe(
      '05 Nov 09:05',
    );
  });
});

describe('buildSignatureRequestEmail', () => {
  it('without a message: DocuSeal’s default subject and body, with the signing link', () => {
    const email = buildSignatureRequestEmail({ variables: variables() });
    expect(email.subject).toBe('You are invited to sign a document');
    expect(email.text).toBe(
      [
        'Hi there,',
        'You have been invited to sign the "NDA".',
        `Review and Sign: ${LINK}`,
        'Please contact us by replying to this email if you have any questions.',
        'Thanks,\nAcme Corp',
      ].join('\n\n'),
    );
    expect(email.html).toContain(`<p><a href="${LINK}">Review and Sign</a></p>`);
    expect(email.html).toContain('<p>You have been invited to sign the &quot;NDA&quot;.</p>');
    expect(email.html).toContain('<p>Thanks,<br>\nAcme Corp</p>');
  });

  it('defaults for a form without signature fields and for a view-only party', () => {
    const submit = buildSignatureRequestEmail({ variables: variables(), purpose: 'submit' });
    expect(submit.subject).toBe(requestSubject('submit'));
    expect(submit.text).toContain('You have been invited to submit the "NDA" form.');
    expect(submit.text).toContain(`Review and Submit: ${LINK}`);
    const view = buildSignatureRequestEmail({ variables: variables(), purpose: 'view' });
    expect(view.subject).toBe('You are invited to view a document');
    expect(view.text).toContain(LINK);
  });

  it('a custom subject and body take the variables; the body is not given the link it lacks (§14.10)', () => {
    const email = buildSignatureRequestEmail({
      variables: variables(),
      message: {
        subject: 'Please sign {{template.name}} for {{account.name}}',
        body: 'Hello {{submitter.first_name}},\n\nsee you soon.',
      },
    });
    expect(email.subject).toBe('Please sign NDA for Acme Corp');
    expect(email.text).toBe('Hello Ann,\n\nsee you soon.');
    expect(email.text).not.toContain(LINK);
    expect(email.html).not.toContain(LINK);
  });

  it('a custom body with {{submitter.link}} links it; appendLinkIfMissing adds it as DocuSeal’s UI does', () => {
    const linked = buildSignatureRequestEmail({
      variables: variables(),
      message: { subject: 'S', body: 'Sign here: {{submitter.link}}\n\nOr [open it]({{submitter.link}}).' },
    });
    expect(linked.text).toBe(`Sign here: ${LINK}\n\nOr open it: ${LINK}.`);
    expect(linked.html).toContain(`<p>Sign here: <a href="${LINK}">${LINK}</a></p>`);
    expect(linked.html).toContain(`<p>Or <a href="${LINK}">open it</a>.</p>`);

    const appended = buildSignatureRequestEmail({
      variables: variables(),
      message: { body: 'Please sign.' },
      appendLinkIfMissing: true,
    });
    expect(appended.text).toBe(`Please sign.\n\n${LINK}`);
    const notTwice = buildSignatureRequestEmail({
      variables: variables(),
      message: { body: 'Go: {submitter.link}' },
      appendLinkIfMissing: true,
    });
    expect(notTwice.text).toBe(`Go: ${LINK}`);
  });

  it('a body without a subject gets “You are invited to sign a document”; subjects are one line', () => {
    expect(
      buildSignatureRequestEmail({ variables: variables(), message: { subject: '  ', body: 'B' }, purpose: 'submit' })
        .subject,
    ).toBe('You are invited to sign a document');
    expect(
      buildSignatureRequestEmail({ variables: variables(), message: { subject: 'A\r\nBcc: x@y', body: 'B' } }).subject,
    ).toBe('A Bcc: x@y');
  });

  it('escapes values and text in HTML, renders bold and italic, refuses javascript: links', () => {
    const v = variables({ template: { id: 7, name: '<script>alert(1)</script>' } });
    const email = buildSignatureRequestEmail({
      variables: v,
      message: { subject: 'S', body: '**{{template.name}}** for *you* & [click](javascript:alert(1)) snake_case_word' },
    });
    expect(email.html).toContain('<strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong> for <em>you</em> &amp; click');
    expect(email.html).toContain('snake_case_word');
    expect(email.html).not.toContain('javascript:');
    expect(email.text).toContain('**<script>alert(1)</script>** for *you* &');
  });
});

describe('buildSignatureRequestSms', () => {
  it('is DocuSeal’s short text with the link, or a given body with variables', () => {
    expect(buildSignatureRequestSms({ variables: variables() })).toBe(
      `Acme Corp has invited you to sign a document: ${LINK}`,
    );
    expect(
      buildSignatureRequestSms({ variables: variables(), body: 'Sign {{template.name}}: {{submitter.link}}' }),
    ).toBe(`Sign NDA: ${LINK}`);
  });
});
