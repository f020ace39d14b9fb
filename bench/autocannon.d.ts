/** The part of autocannon 9's API bench/run.ts uses (the package ships no types). */
declare module 'autocannon' {
  interface Options {
    /** Several URLs: connection i goes to url[i mod n] (bench/scale.ts: round-robin over instances). */
    url: string | string[];
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    /** Seconds. */
    duration?: number;
    pipelining?: number;
    /** Seconds. */
    timeout?: number;
    /** Requests sent in turn on each connection (bench/idempotency.ts: a new header per request). */
    requests?: RequestOptions[];
  }

  interface RequestOptions {
    method?: Options['method'];
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Called before each request is sent; returns the request to send. */
    setupRequest?: (request: RequestOptions) => RequestOptions;
  }

  /** Percentiles and moments of one histogram (latency in ms, requests per second, bytes per second). */
  interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    total: number;
    p50: number;
    p90: number;
    p99: number;
    [percentile: string]: number;
  }

  interface Result {
    latency: Histogram;
    requests: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    /** Seconds. */
    duration: number;
  }

  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
