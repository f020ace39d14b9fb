import { builder } from '../builder.ts';

export const AccountRef = builder.prismaObject('Account', {
  description: 'A tenant: the owner of templates, submissions, users and API keys.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    uuid: t.exposeString('uuid'),
    name: t.exposeString('name'),
    timezone: t.exposeString('timezone'),
    locale: t.exposeString('locale'),
    testing: t.exposeBoolean('testing', {
      description: 'Testing accounts produce documents marked not legally binding.',
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime' }),
  }),
});

export const UserRef = builder.prismaObject('User', {
  description: 'A person of an account.',
  fields: (t) => ({
    id: t.exposeInt('id'),
    uuid: t.exposeString('uuid'),
    email: t.exposeString('email'),
    firstName: t.exposeString('firstName', { nullable: true }),
    lastName: t.exposeString('lastName', { nullable: true }),
    role: t.exposeString('role'),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
    account: t.relation('account'),
  }),
});
