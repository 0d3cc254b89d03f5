// The deployment templates call the CLI as it is: every `peppol-snapshot … run` line in them uses only
// options `run` has, and the schedules say every 15 minutes.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';

/** The options a command's --help lists (e.g. "--config"). */
async function optionsOf(command: string): Promise<Set<string>> {
  const r = await runCli([command, '--help']);
  expect(r.code).toBe(0);
  return new Set([...r.stdout.matchAll(/^\s+(?:-\w, )?(--[\w-]+)/gm)].map((m) => m[1]!));
}

/** The options of every `dist/peppol-snapshot.mjs run` call in a template's text. */
function runCalls(text: string): string[][] {
  return [...text.matchAll(/peppol-snapshot\.mjs run((?: --[\w-]+(?: "[^"]*"| [^\s-|>][^\s|>]*)?)*)/g)].map((m) => [...m[1]!.matchAll(/--[\w-]+/g)].map((o) => o[0]));
}

describe('deployment templates', () => {
  it('call run with options it has (crontab, systemd service, CI workflow)', async () => {
    const known = await optionsOf('run');
    expect(known).toContain('--config');
    for (const file of ['templates/cron.example', 'templates/peppol-snapshot-run.service', 'templates/github-actions-run.yml']) {
      const calls = runCalls(fs.readFileSync(file, 'utf8'));
      expect(calls.length, `${file} calls run`).toBeGreaterThan(0);
      for (const opts of calls) for (const o of opts) expect(known, `${file}: ${o}`).toContain(o);
    }
  });

  it('schedule a cycle every 15 minutes', () => {
    expect(fs.readFileSync('templates/cron.example', 'utf8')).toMatch(/^\s*\*\/15\s+\*\s+\*\s+\*\s+\*\s+cd .* run /m);
    expect(fs.readFileSync('templates/peppol-snapshot-run.timer', 'utf8')).toMatch(/^OnCalendar=\*:0\/15$/m);
    expect(fs.readFileSync('templates/github-actions-run.yml', 'utf8')).toMatch(/- cron: '\*\/15 \* \* \* \*'/);
    expect(fs.readFileSync('templates/peppol-snapshot-run.service', 'utf8')).toMatch(/^Type=oneshot$/m);
  });
});
