/**
 * Where a process's CPU went, from the `.cpuprofile` files `node --cpu-prof` wrote: self time by
 * origin (an npm package, Node's internals, or a source file of this repository; dist/main.mjs
 * is mapped back to src/ through its source map when it has one) and by function, idle excluded,
 * for windows of the profile's clock. Shared by bench/submissions.ts, bench/webhooks.ts and
 * bench/completion.ts.
 */
import fs from 'node:fs/promises';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from './processes.ts';
import { fmt, print, round } from './util.ts';

/** A window in microseconds of CLOCK_MONOTONIC: V8's profile clock on Linux, and process.hrtime's. */
export interface ProfileWindow {
  from: number;
  to: number;
}

/** process.hrtime in microseconds, the clock of ProfileWindow. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

export interface ProfileRow {
  name: string;
  ms: number;
  /** Share of the window's sampled (non-idle) time. */
  percent: number;
}

export interface ProfileSummary {
  /** Sampled non-idle time in the window, ms. */
  totalMs: number;
  /** Descending. */
  byOrigin: ProfileRow[];
  /** "function  file:line", descending. */
  byFunction: ProfileRow[];
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * One summary per window (`undefined`: every sample) over all the `.cpuprofile` files in `dir`.
 * @returns undefined when `dir` holds no profile
 */
export async function summarizeCpuProfiles(
  dir: string,
  windows: (ProfileWindow | undefined)[],
): Promise<ProfileSummary[] | undefined> {
  const files = (await fs.readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return undefined;
  const profiles = await Promise.all(
    files.map(async (f) => JSON.parse(await fs.readFile(path.join(dir, f), 'utf8')) as CpuProfile),
  );
  const map = await fs
    .readFile(path.join(REPO_ROOT, 'dist', 'main.mjs.map'), 'utf8')
    .then((text) => new SourceMap(JSON.parse(text)))
    .catch(() => undefined);

  return windows.map((window) => {
    const byOrigin = new Map<string, number>();
    const byFunction = new Map<string, number>();
    let total = 0;
    for (const profile of profiles) {
      const frames = new Map(profile.nodes.map((n) => [n.id, describeFrame(n.callFrame, map)]));
      let at = profile.startTime;
      profile.samples.forEach((id, i) => {
        const delta = profile.timeDeltas[i] ?? 0;
        at += delta;
        const frame = frames.get(id)!;
        if (frame.idle || (window && (at < window.from || at > window.to))) return;
        total += delta;
        byOrigin.set(frame.origin, (byOrigin.get(frame.origin) ?? 0) + delta);
        byFunction.set(frame.name, (byFunction.get(frame.name) ?? 0) + delta);
      });
    }
    const rank = (m: Map<string, number>): ProfileRow[] =>
      [...m.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([name, us]) => ({ name, ms: round(us / 1000, 1), percent: round((us / Math.max(total, 1)) * 100, 1) }));
    return { totalMs: round(total / 1000, 0), byOrigin: rank(byOrigin), byFunction: rank(byFunction) };
  });
}

function describeFrame(
  callFrame: ProfileNode['callFrame'],
  map: SourceMap | undefined,
): { origin: string; name: string; idle: boolean } {
  const { functionName, url, lineNumber, columnNumber } = callFrame;
  let origin: string;
  let where = url;
  if (!url)
    origin = functionName; // (garbage collector), (program), (idle)
  else if (url.startsWith('node:')) origin = 'node internals';
  else if (url.includes('/node_modules/')) {
    const inPackage = url.slice(url.lastIndexOf('/node_modules/') + '/node_modules/'.length);
    origin = inPackage
      .split('/')
      .slice(0, inPackage.startsWith('@') ? 2 : 1)
      .join('/');
    where = `${inPackage}:${lineNumber + 1}`;
  } else if (url.endsWith('dist/main.mjs') && map) {
    const entry = map.findEntry(lineNumber, columnNumber) as { originalSource?: string; originalLine?: number };
    // Sources are relative to dist/ in the map (or file:// URLs once resolved).
    const original = entry.originalSource;
    const source = original
      ? path.relative(
          REPO_ROOT,
          original.startsWith('file://') ? fileURLToPath(original) : path.resolve(REPO_ROOT, 'dist', original),
        )
      : 'dist/main.mjs';
    origin = source.startsWith('src/generated') ? 'src/generated (Prisma client)' : source;
    where = `${source}:${(entry.originalLine ?? 0) + 1}`;
  } else {
    origin = path.relative(REPO_ROOT, url.startsWith('file://') ? fileURLToPath(url) : url);
    where = `${origin}:${lineNumber + 1}`;
  }
  return { origin, name: `${functionName || '(anonymous)'}  ${where}`.trim(), idle: functionName === '(idle)' };
}

/**
 * Prints self time of the service's CPU profile by package or source file, and the top functions,
 * for the samples taken within `window` (µs of the monotonic clock), named `what` ("the burst").
 */
export async function printProfile(dir: string, window: ProfileWindow, what: string): Promise<void> {
  const [summary] = (await summarizeCpuProfiles(dir, [window])) ?? [];
  if (!summary) return;
  print('');
  print(
    `CPU profile of the service during ${what}, ${fmt(summary.totalMs, 0)} ms busy (${dir}, window ${window.from}–` +
      `${window.to} µs):`,
  );
  for (const row of summary.byOrigin.slice(0, 12)) print(`  ${fmt(row.percent, 1)}%  ${row.name}`);
  for (const row of summary.byFunction.slice(0, 20)) print(`  ${fmt(row.percent, 1)}%  ${row.name}`);
}
