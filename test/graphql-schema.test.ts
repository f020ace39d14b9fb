/** schema.graphql is the printed Pothos schema; regenerate with `npm run schema:print`. */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { printedSchema } from '../src/graphql/schema/index.ts';
import { ROOT } from './helpers/processes.ts';

it('schema.graphql is up to date (run `npm run schema:print`)', () => {
  const committed = fs.readFileSync(path.join(ROOT, 'schema.graphql'), 'utf8');
  expect(committed).toBe(printedSchema());
});
