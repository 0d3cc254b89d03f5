// Runs the bundled CLI (dist/peppol-snapshot.mjs, built by test/global-setup.ts) as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

export const CLI = resolve('dist/peppol-snapshot.mjs');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `opts.cli`: another copy of the bundle (default CLI). */
export function startCli(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; cli?: string } = {}): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [opts.cli ?? CLI, ...args], { cwd: opts.cwd ?? process.cwd(), env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<CliResult>((ok) => child.on('close', (code) => ok({ code, stdout, stderr })));
  return { child, done };
}

export function runCli(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; cli?: string } = {}): Promise<CliResult> {
  return startCli(args, opts).done;
}

export interface Served {
  url: string;
  child: ChildProcess;
  done: Promise<CliResult>;
  stderr: () => string;
}

/** Starts the built CLI's `serve` with `args` (add `--port 0`) and resolves once it prints the URL it listens on. */
export async function startServe(args: string[], opts: { timeoutMs?: number } = {}): Promise<Served> {
  const { child, done } = startCli(['serve', ...args]);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`serve did not start: ${err}`)), opts.timeoutMs ?? 30_000);
    const onData = (): void => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        child.stderr!.off('data', onData);
        ok(m[1]!);
      }
    };
    child.stderr!.on('data', onData);
    void done.then((r) => {
      clearTimeout(timer);
      fail(new Error(`serve exited ${r.code}: ${r.stderr}`));
    });
  });
  return { url, child, done, stderr: () => err };
}
