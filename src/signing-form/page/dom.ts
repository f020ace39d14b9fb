/** A small element builder for the page (no framework: the page is a handful of controls). */

type Props<K extends keyof HTMLElementTagNameMap> = Partial<Omit<HTMLElementTagNameMap[K], 'style' | 'dataset'>>;

/**
 * Creates an element with properties (className, type, ariaLabel, …) and children (nodes or text).
 * Text children are set as text, never parsed as HTML.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props<K> = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  Object.assign(element, props);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
}

/** A unique id for label/description wiring. */
let counter = 0;
export const uniqueId = (prefix: string): string => `${prefix}-${++counter}`;
