// The deployment templates call the CLI as it is: every `peppol-snapshot … run` line in them uses only
// options `run` has, and the schedules say every 15 minutes.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stagingDir } from '../src/bulk/background.js';
import { parseConfig } from '../src/config/index.js';
import { statePath } from '../src/render/state.js';
import { lockFileOf } from '../src/util/lock.js';
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

  it('the systemd unit lets run write every path it writes, and not its code', () => {
    const unit = fs.readFileSync('templates/peppol-snapshot-run.service', 'utf8');
    const setting = (name: string) => [...unit.matchAll(new RegExp(`^${name}=(.*)$`, 'gm'))].flatMap((m) => m[1]!.trim().split(/\s+/));
    expect(setting('ProtectSystem')).toEqual(['strict']);
    const dir = setting('WorkingDirectory')[0]!;
    const rules = [...setting('ReadWritePaths').map((p) => ({ p, rw: true })), ...setting('ReadOnlyPaths').map((p) => ({ p, rw: false }))];
    /** Under ProtectSystem=strict everything is read-only but the ReadWritePaths; the most specific rule wins. */
    const writable = (file: string) => {
      const match = rules.filter((r) => file === r.p || file.startsWith(`${r.p}/`)).sort((a, b) => b.p.length - a.p.length)[0];
      return match?.rw ?? false;
    };
    // The service's config file, with its defaults for the paths, resolved where the unit runs it.
    const configFile = /--config (\S+)/.exec(unit)![1]!;
    const config = parseConfig({ publish: { target: { type: 'directory', path: 'publish' } } }, dir, path.join(dir, configFile));
    if (config.publish.target.type !== 'directory') throw new Error('a directory target');
    const writes = [
      config.database,
      `${config.database}-wal`,
      lockFileOf(config.database),
      config.out,
      lockFileOf(config.out),
      statePath(config.out),
      stagingDir(config.out),
      lockFileOf(stagingDir(config.out)),
      config.publish.target.path,
    ];
    expect(writes.filter((f) => !writable(f))).toEqual([]);
    for (const code of ['dist/peppol-snapshot.mjs', 'dist/bulk-writer.mjs', 'node_modules/better-sqlite3', configFile]) expect(writable(path.join(dir, code)), code).toBe(false);
  });

  it('schedule a cycle every 15 minutes', () => {
    expect(fs.readFileSync('templates/cron.example', 'utf8')).toMatch(/^\s*\*\/15\s+\*\s+\*\s+\*\s+\*\s+cd .* run /m);
    expect(fs.readFileSync('templates/peppol-snapshot-run.timer', 'utf8')).toMatch(/^OnCalendar=\*:0\/15$/m);
    expect(fs.readFileSync('templates/github-actions-run.yml', 'utf8')).toMatch(/- cron: '\*\/15 \* \* \* \*'/);
    expect(fs.readFileSync('templates/peppol-snapshot-run.service', 'utf8')).toMatch(/^Type=oneshot$/m);
  });
});
