/**
 * The docs point at things that exist: every relative link in README.md, docs/*.md,
 * bench/README.md and samples/README.md resolves inside the repository (the file, and a
 * `#fragment` as one of its headings, with GitHub's anchors); every path they write out
 * (`src/…`, `../shared/…`) and every page they cite by name (`DESIGN.md`) is in the repository;
 * and every `npm run <script>` and `signet <command>` they quote is one that package.json and the
 * CLI know, with options the command takes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildSchema, isEnumType, isObjectType, parse, print, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { USAGE } from '../src/cli/main.ts';
import { fencedBlocks, withoutFences } from './helpers/markdown.ts';
import { ROOT } from './helpers/processes.ts';

const DOCS = [
  'README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  'bench/README.md',
  'samples/README.md',
];

/** GitHub's anchor of a heading: lower case, formatting and punctuation dropped, spaces → `-`. */
export function githubSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .toLowerCase()
    .trim()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings, numbered as GitHub numbers repeats (`-1`, `-2`). */
function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(fs.readFileSync(file, 'utf8')).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = githubSlug(heading[1]!);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** `[text](target)` links outside code, with their line numbers. */
function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  withoutFences(markdown)
    .split('\n')
    .forEach((text, index) => {
      const prose = text.replace(/(`+)[^`]*?\1/g, ''); // inline code is not a link
      for (const match of prose.matchAll(/!?\[(?:[^\]]|\][^(])*?\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        links.push({ target: match[1]!, line: index + 1 });
      }
    });
  return links;
}

/** What is wrong with one relative link of `doc`, or undefined when it resolves. */
function checkLink(doc: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto:
  const [rawPath, fragment] = target.split('#', 2) as [string, string | undefined];
  const file =
    rawPath === ''
      ? path.join(ROOT, doc)
      : path.resolve(path.dirname(path.join(ROOT, doc)), decodeURIComponent(rawPath));
  const relative = path.relative(ROOT, file);
  if (relative.startsWith('..') || path.isAbsolute(relative)) return 'points outside the repository';
  if (!fs.existsSync(file)) return `${relative} does not exist`;
  if (fragment === undefined) return undefined;
  if (!file.endsWith('.md')) return `#${fragment} on a file that is not Markdown`;
  if (!anchorsOf(file).has(decodeURIComponent(fragment)))
    return `${relative} has no heading with the anchor #${fragment}`;
  return undefined;
}

/** Whether `file` exists, or, with a `*` in its last part (`test/notifications-*.test.ts`), a file matches it. */
function existsOrMatches(file: string): boolean {
  if (!path.basename(file).includes('*')) return fs.existsSync(file);
  const pattern = new RegExp(
    `^${path
      .basename(file)
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return fs.existsSync(path.dirname(file)) && fs.readdirSync(path.dirname(file)).some((name) => pattern.test(name));
}

/** The code the docs quote: inline code spans and fenced blocks, as text. */
function quotedCode(markdown: string): string[] {
  const code = fencedBlocks(markdown).map((block) => block.body);
  for (const match of withoutFences(markdown).matchAll(/(`+)([^`]+?)\1/g)) code.push(match[2]!);
  return code;
}

/** The CLI's commands, from its usage text: "account create" → the usage lines that describe it. */
function cliCommands(): Map<string, string> {
  const commands = new Map<string, string>();
  let current: string | undefined;
  for (const line of USAGE.split('\n')) {
    const command = /^ {2}([a-z][a-z-]*(?: [a-z][a-z-]*)?)(?= --| \[|$)/.exec(line);
    if (command) {
      current = command[1]!;
      commands.set(current, line);
    } else if (current && /^ {4,}/.test(line)) {
      commands.set(current, `${commands.get(current)}\n${line}`);
    } else {
      current = undefined;
    }
  }
  return commands;
}

/** What is wrong with one quoted `signet …` command line, or undefined when the CLI takes it. */
function checkSignetCommand(words: string[], commands: Map<string, string>): string | undefined {
  const [first, second] = words;
  if (first === 'help' || first === '--help') return undefined;
  const name = second !== undefined && commands.has(`${first} ${second}`) ? `${first} ${second}` : first!;
  const usage = commands.get(name);
  if (!usage) return `the CLI has no command "${words.slice(0, 2).join(' ')}"`;
  for (const flag of words.filter((w) => w.startsWith('--'))) {
    const option = flag.split('=')[0]!;
    if (option === '--help') continue;
    if (!new RegExp(`(^|[\\s\\[])${option}(?=[\\s\\]=]|$)`, 'm').test(usage))
      return `"signet ${name}" takes no ${option}`;
  }
  return undefined;
}

const SCHEMA = buildSchema(fs.readFileSync(path.join(ROOT, 'schema.graphql'), 'utf8'));

/**
 * The GraphQL a page quotes (```graphql blocks, and the queries its curl and JavaScript examples
 * send: `"query": "…"`, `query: '…'`) checked against schema.graphql: operations must validate;
 * an excerpt of the schema (type and enum definitions) must name the schema's types, fields (with
 * their types) and values.
 */
function graphqlProblems(doc: string, markdown: string): { operations: number; wrong: string[] } {
  const wrong: string[] = [];
  let operations = 0;
  const sources = fencedBlocks(markdown)
    .filter((b) => b.info === 'graphql')
    .map((b) => b.body);
  for (const match of markdown.matchAll(/"query":\s*"((?:[^"\\]|\\.)*)"|\bquery:\s*'([^']*)'/g)) {
    sources.push(match[1] !== undefined ? JSON.parse(`"${match[1]}"`) : match[2]!);
  }
  for (const source of sources) {
    const document = parse(source);
    if (document.definitions.every((d) => d.kind === 'OperationDefinition' || d.kind === 'FragmentDefinition')) {
      operations++;
      for (const error of validate(SCHEMA, document)) wrong.push(`${doc}: ${error.message}`);
      continue;
    }
    for (const definition of document.definitions) {
      if (definition.kind !== 'ObjectTypeDefinition' && definition.kind !== 'EnumTypeDefinition') continue;
      const name = definition.name.value;
      const actual = SCHEMA.getType(name);
      if (definition.kind === 'ObjectTypeDefinition') {
        const fields = isObjectType(actual) ? actual.getFields() : undefined;
        if (!fields) wrong.push(`${doc}: type ${name} is not in schema.graphql`);
        for (const field of fields ? (definition.fields ?? []) : []) {
          const real = fields![field.name.value];
          if (!real) wrong.push(`${doc}: ${name}.${field.name.value} is not in schema.graphql`);
          else if (String(real.type) !== print(field.type))
            wrong.push(`${doc}: ${name}.${field.name.value} is ${real.type}, not ${print(field.type)}`);
        }
      } else {
        const values = isEnumType(actual) ? actual.getValues().map((v) => v.name) : undefined;
        if (!values) wrong.push(`${doc}: enum ${name} is not in schema.graphql`);
        for (const value of values ? (definition.values ?? []) : []) {
          if (!values!.includes(value.name.value))
            wrong.push(`${doc}: ${name}.${value.name.value} is not in schema.graphql`);
        }
      }
    }
  }
  return { operations, wrong };
}

describe('docs', () => {
  it('links only to files and headings that exist in the repository', () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      for (const { target, line } of linksOf(fs.readFileSync(path.join(ROOT, doc), 'utf8'))) {
        const problem = checkLink(doc, target);
        if (problem) broken.push(`${doc}:${line} (${target}): ${problem}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('names only files of the repository where they give a path', () => {
    // Paths written out (`src/…`, `test/…`, `../shared/…`) rather than linked: they must exist too.
    // bench/README.md is left out: its fixtures live beside the repository (../shared/fixtures).
    const missing: string[] = [];
    for (const doc of DOCS.filter((d) => d !== 'bench/README.md')) {
      const markdown = fs.readFileSync(path.join(ROOT, doc), 'utf8');
      for (const text of [markdown]) {
        const repoPath = new RegExp(
          String.raw`(?<![\w./-])((?:\.\.\/)*(?:src|test|bench|docs|rest-compat|scripts|prisma|samples|bin|shared)` +
            String.raw`\/[\w./*-]*[\w/*])`,
          'g',
        );
        for (const match of text.matchAll(repoPath)) {
          const written = match[1]!;
          if (/\.\.\.$/.test(written)) continue;
          // `../x` in docs/ is relative to the page; anything else to the repository's root.
          const file = written.startsWith('../')
            ? path.resolve(ROOT, path.dirname(doc), written)
            : path.join(ROOT, written);
          const relative = path.relative(ROOT, file);
          if (relative.startsWith('..') || !existsOrMatches(file)) missing.push(`${doc}: ${written}`);
        }
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it('names only Markdown pages that the repository has', () => {
    // A page cited by name alone ("DESIGN.md, Security model") must be one a reader can open.
    const pages = new Set(
      [...DOCS, ...fs.readdirSync(ROOT).filter((f) => f.endsWith('.md'))].map((f) => path.basename(f)),
    );
    for (const dir of ['samples', 'test', 'scripts']) {
      if (fs.existsSync(path.join(ROOT, dir)))
        for (const f of fs.readdirSync(path.join(ROOT, dir))) if (f.endsWith('.md')) pages.add(f);
    }
    const unknown: string[] = [];
    for (const doc of DOCS) {
      for (const match of fs.readFileSync(path.join(ROOT, doc), 'utf8').matchAll(/(?<![\w/.-])([\w-]+\.md)\b/g)) {
        if (!pages.has(match[1]!)) unknown.push(`${doc}: ${match[1]}`);
      }
    }
    expect([...new Set(unknown)]).toEqual([]);
  });

  it('quotes only npm scripts that package.json has', () => {
    const scripts = Object.keys(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts);
    const unknown: string[] = [];
    let quoted = 0;
    for (const doc of DOCS) {
      for (const code of quotedCode(fs.readFileSync(path.join(ROOT, doc), 'utf8'))) {
        for (const match of code.matchAll(/\bnpm run ([\w:.-]+)(\*?)/g)) {
          if (match[2]) continue; // `npm run bench:*`: a family, not a script
          quoted++;
          if (!scripts.includes(match[1]!)) unknown.push(`${doc}: npm run ${match[1]}`);
        }
      }
    }
    expect(quoted).toBeGreaterThan(5);
    expect(unknown).toEqual([]);
  });

  it('quotes only signet commands and options that the CLI knows', () => {
    const commands = cliCommands();
    expect([...commands.keys()]).toEqual(
      expect.arrayContaining(['account create', 'api-key create', 'webhook add', 'migrate']),
    );
    const wrong: string[] = [];
    let quoted = 0;
    for (const doc of DOCS) {
      for (const code of quotedCode(fs.readFileSync(path.join(ROOT, doc), 'utf8'))) {
        for (const line of code.split('\n')) {
          // `signet …` at the start of a command (after npx, $, a pipe or `$(`), up to a comment.
          const command = /(?:^|npx\s+|\$\(\s*|[|;&]\s*)signet\s+([^#`)|;&]*)/.exec(line.trim());
          if (!command) continue;
          const words = (command[1]!.match(/"[^"]*"|'[^']*'|\S+/g) ?? []).filter((w) => !w.startsWith('<'));
          if (words.length === 0 || /^([A-Z<[]|\.\.\.|…)/.test(words[0]!)) continue; // "signet <command>", "signet ..."
          quoted++;
          const problem = checkSignetCommand(words, commands);
          if (problem) wrong.push(`${doc}: signet ${command[1]!.trim()}: ${problem}`);
        }
      }
    }
    expect(quoted).toBeGreaterThan(5);
    expect(wrong).toEqual([]);
  });

  it('quotes GraphQL that schema.graphql answers: operations valid, excerpts of the schema true', () => {
    const wrong: string[] = [];
    let operations = 0;
    for (const doc of DOCS) {
      const found = graphqlProblems(doc, fs.readFileSync(path.join(ROOT, doc), 'utf8'));
      operations += found.operations;
      wrong.push(...found.wrong);
    }
    expect(operations).toBeGreaterThan(5);
    expect(wrong).toEqual([]);
  });

  it('finds a broken link, a missing anchor and an unknown command when there is one', () => {
    // The checks above pass only if they can fail: each helper against a known bad case.
    expect(checkLink('README.md', 'docs/nowhere.md')).toMatch(/does not exist/);
    expect(checkLink('README.md', 'docs/security.md#no-such-heading')).toMatch(/no heading/);
    expect(checkLink('README.md', 'docs/security.md#graphql-limits')).toBeUndefined();
    expect(checkLink('docs/webhooks.md', '../../shared/DESIGN.md')).toMatch(/outside/);
    expect(githubSlug('Abuse (`npm run bench:abuse`)')).toBe('abuse-npm-run-benchabuse');
    expect(githubSlug('CORS: an allow-list, never credentials')).toBe('cors-an-allow-list-never-credentials');
    const commands = cliCommands();
    expect(checkSignetCommand(['api-key', 'create', '--user-id', '1'], commands)).toBeUndefined();
    expect(checkSignetCommand(['api-key', 'create', '--account-id', '1'], commands)).toMatch(/takes no --account-id/);
    expect(checkSignetCommand(['template', 'list'], commands)).toMatch(/no command/);
    const bad =
      '```graphql\n{ viewer { nickname } }\n```\n```graphql\ntype SigningForm { slug: Int! }\nenum SigningFormState ' +
      '{ OPEN, PAUSED }\n```\n';
    expect(graphqlProblems('x.md', `${bad}curl -d '{"query": "{ templatez { id } }"}'`).wrong).toEqual([
      expect.stringMatching(/Cannot query field "nickname"/),
      expect.stringMatching(/SigningForm.slug is String!, not Int!/),
      expect.stringMatching(/SigningFormState.PAUSED is not in schema/),
      expect.stringMatching(/Cannot query field "templatez"/),
    ]);
  });
});
