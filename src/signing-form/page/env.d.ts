// The page's build (esbuild in page-routes.ts) bundles imported CSS into form.css.
declare module '*.css';
