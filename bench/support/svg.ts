/** A dependency-free SVG line chart: enough for makespan against N, readable in a Markdown viewer. */

/** One line of the chart. */
export interface Series {
  readonly label: string;
  readonly color: string;
  readonly points: readonly (readonly [x: number, y: number])[];
}

/** What the chart shows. */
export interface ChartOptions {
  readonly title: string;
  readonly subtitle?: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
}

const WIDTH = 720;
const HEIGHT = 440;
const MARGIN = { top: 64, right: 24, bottom: 56, left: 72 };

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Round tick steps (1, 2, 5 x 10^k) giving about `count` ticks from 0 to `max`. */
function ticks(max: number, count: number): number[] {
  if (!(max > 0)) return [0, 1];
  const rough = max / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough) ?? 10 * power;
  const result: number[] = [];
  for (let value = 0; value <= max + step / 2; value += step) result.push(Number(value.toPrecision(12)));
  if ((result.at(-1) ?? 0) < max) result.push((result.at(-1) ?? 0) + step);
  return result;
}

function label(value: number): string {
  return value >= 1000 ? `${value / 1000}k` : String(value);
}

/** Renders the chart as a standalone SVG document. */
export function lineChart(options: ChartOptions): string {
  const all = options.series.flatMap((s) => s.points);
  const xTicks = ticks(Math.max(...all.map(([x]) => x), 1), 6);
  const yTicks = ticks(Math.max(...all.map(([, y]) => y), 1), 6);
  const xMax = xTicks.at(-1) ?? 1;
  const yMax = yTicks.at(-1) ?? 1;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const sx = (x: number): number => MARGIN.left + (x / xMax) * plotW;
  const sy = (y: number): number => MARGIN.top + plotH - (y / yMax) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(options.title)}</text>`,
  ];
  if (options.subtitle) {
    parts.push(
      `<text x="${WIDTH / 2}" y="40" text-anchor="middle" fill="#555">${escapeXml(options.subtitle)}</text>`,
    );
  }
  for (const y of yTicks) {
    parts.push(
      `<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${sy(y)}" y2="${sy(y)}" stroke="#e5e5e5"/>`,
      `<text x="${MARGIN.left - 8}" y="${sy(y) + 4}" text-anchor="end">${label(y)}</text>`,
    );
  }
  for (const x of xTicks) {
    parts.push(
      `<line x1="${sx(x)}" x2="${sx(x)}" y1="${MARGIN.top + plotH}" y2="${MARGIN.top + plotH + 5}" stroke="#333"/>`,
      `<text x="${sx(x)}" y="${MARGIN.top + plotH + 20}" text-anchor="middle">${label(x)}</text>`,
    );
  }
  parts.push(
    `<line x1="${MARGIN.left}" x2="${MARGIN.left}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="#333"/>`,
    `<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${MARGIN.top + plotH}" y2="${MARGIN.top + plotH}" stroke="#333"/>`,
    `<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 14}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(18 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
  );
  options.series.forEach((series, index) => {
    const sorted = [...series.points].sort((a, b) => a[0] - b[0]);
    const path = sorted.map(([x, y], i) => `${i === 0 ? 'M' : 'L'}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`);
    parts.push(`<path d="${path.join(' ')}" fill="none" stroke="${series.color}" stroke-width="2"/>`);
    for (const [x, y] of sorted) {
      parts.push(
        `<circle cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3.5" fill="${series.color}"/>`,
      );
    }
    const legendY = MARGIN.top + 12 + index * 18;
    parts.push(
      `<line x1="${MARGIN.left + 12}" x2="${MARGIN.left + 36}" y1="${legendY}" y2="${legendY}" stroke="${series.color}" stroke-width="2"/>`,
      `<text x="${MARGIN.left + 42}" y="${legendY + 4}">${escapeXml(series.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
