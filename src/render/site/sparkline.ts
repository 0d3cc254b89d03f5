// Uptime sparklines of the status page: inline SVG computed at build time, with a text alternative
// (role="img" and a <title> giving the figures), so the page needs no script and no request.

/** The vertical scale: 90 % (bottom) to 100 % (top); lower values sit on the bottom line. */
export const SPARK_FLOOR = 90;
const STEP = 4;
const HEIGHT = 20;

const fmt = (n: number): string => String(Math.round(n * 10) / 10);

/** Percent with two decimals, e.g. "99.95 %". */
export function pct(v: number): string {
  return `${v.toFixed(2)} %`;
}

export interface SparkFigures {
  /** Mean of the measured slots, null when none was measured. */
  mean: number | null;
  lowest: number | null;
  measured: number;
}

export function figures(series: ReadonlyArray<number | null>): SparkFigures {
  const m = series.filter((v): v is number => v !== null);
  return { mean: m.length === 0 ? null : m.reduce((s, v) => s + v, 0) / m.length, lowest: m.length === 0 ? null : Math.min(...m), measured: m.length };
}

/**
 * An SVG sparkline of per-slot uptime percentages (null: not measured, a gap in the line). `what`
 * names the window for the text alternative ("last 24 hours"), `unit` its slots ("hours").
 */
export function sparkline(series: ReadonlyArray<number | null>, what: string, unit: string): string {
  const f = figures(series);
  const alt =
    f.mean === null
      ? `Uptime, ${what}: no measurement`
      : `Uptime, ${what}: mean ${pct(f.mean)}, lowest ${pct(f.lowest!)}; ${f.measured} of ${series.length} ${unit} measured`;
  let d = '';
  let pen = false;
  series.forEach((v, i) => {
    if (v === null) {
      pen = false;
      return;
    }
    const y = ((100 - Math.max(SPARK_FLOOR, Math.min(100, v))) * HEIGHT) / (100 - SPARK_FLOOR);
    d += `${pen ? 'L' : 'M'}${i * STEP} ${fmt(y + 1)}`;
    pen = true;
  });
  const w = (series.length - 1) * STEP;
  // A lone measured slot between gaps draws as a dot (a zero-length line with round caps).
  return `<svg role="img" class="spark" viewBox="0 0 ${w} ${HEIGHT + 2}" width="${w}" height="${HEIGHT + 2}" preserveAspectRatio="none"><title>${alt}</title>${d === '' ? '' : `<path d="${d}"/>`}</svg>`;
}
