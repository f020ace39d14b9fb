// Prisma CLI configuration (Prisma 7). The service itself never runs the Prisma CLI at run time:
// migrations are applied by src/db/migrate.ts. `prisma generate` needs no database.
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/signet' },
});
