/** Reading Markdown the way the docs tests need: fenced code blocks and what is outside them. */

/** The file with its fenced code blocks blanked out (lines kept, so line numbers stay right). */
export function withoutFences(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

/** The fenced code blocks of a file, each with its info string (`sh`, `graphql`, …). */
export function fencedBlocks(markdown: string): { info: string; body: string }[] {
  const blocks: { info: string; body: string }[] = [];
  let current: { info: string; lines: string[] } | undefined;
  for (const line of markdown.split('\n')) {
    const fence = /^\s*(?:```|~~~)(.*)$/.exec(line);
    if (fence) {
      if (current) {
        blocks.push({ info: current.info, body: current.lines.join('\n') });
        current = undefined;
      } else {
        current = { info: fence[1]!.trim(), lines: [] };
      }
    } else {
      current?.lines.push(line);
    }
  }
  return blocks;
}
