/** Writes the GraphQL schema to schema.graphql (run: npm run schema:print). */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { printedSchema } from '../src/graphql/schema/index.ts';

const target = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'schema.graphql');
fs.writeFileSync(target, printedSchema());
console.log(`wrote ${target}`);
