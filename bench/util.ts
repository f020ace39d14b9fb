/** Small helpers shared by the benchmarks: settings from the environment, statistics, output. */

/** A positive number from the environment, or `fallback` when unset. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got '${raw}'`);
  return value;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function fmt(value: number, digits: number): string {
  return value.toFixed(digits);
}

export function passMiss(pass: boolean): string {
  return pass ? 'PASS' : 'MISS';
}

export function print(line: string): void {
  process.stdout.write(`${line}\n`);
}
