// Progress for long work: a single rewritten status line on a terminal (stderr), nothing otherwise.
export interface Progress {
  update(text: string): void;
  done(text?: string): void;
}

export function createProgress(stream: NodeJS.WriteStream = process.stderr, enabled = stream.isTTY === true): Progress {
  let last = 0;
  let shown = false;
  return {
    update(text: string) {
      if (!enabled) return;
      const now = Date.now();
      if (now - last < 100) return; // at most 10 redraws a second
      last = now;
      const width = stream.columns ?? 100;
      stream.write(`\r\x1b[2K${text.length >= width ? text.slice(0, width - 1) : text}`);
      shown = true;
    },
    done(text?: string) {
      if (!enabled) return;
      if (shown) stream.write('\r\x1b[2K');
      if (text) stream.write(`${text}\n`);
      shown = false;
    },
  };
}

export const silentProgress: Progress = { update() {}, done() {} };
