"""Render an HTML file in headless Chromium (Debian's `chromium`) and inspect it from inside.

`inspect_page` loads a copy of the page with a small script appended; once the page has loaded,
the script draws every <img> onto a canvas and measures it as the browser decoded it (natural
and displayed size, ink share and brightness spread overall and in each half), and counts
tables without body rows. Chromium's `--dump-dom` prints the DOM with those measurements.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,2000", "--virtual-time-budget=10000"]

PROBE = """
<script>
window.addEventListener('load', () => {
  const ink = (d, w, x0, x1, y0, y1) => {  // share of non-white pixels, luminance spread
    let n = 0, dark = 0, s = 0, s2 = 0;
    for (let y = y0; y < y1; y += 2) for (let x = x0; x < x1; x += 2) {
      const i = 4 * (y * w + x), l = (d[i] + d[i + 1] + d[i + 2]) / 3;
      n++; s += l; s2 += l * l; if (l < 245) dark++;
    }
    return {ink: n ? dark / n : 0, std: n ? Math.sqrt(Math.max(0, s2 / n - (s / n) ** 2)) : 0};
  };
  const imgs = [...document.images].map(img => {
    const w = img.naturalWidth, h = img.naturalHeight, r = img.getBoundingClientRect();
    const out = {alt: img.alt, complete: img.complete, w, h, shown_w: r.width};
    if (!w || !h) return out;
    const c = document.createElement('canvas'); c.width = w; c.height = h;
    const g = c.getContext('2d'); g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, w, h).data;
    out.all = ink(d, w, 0, w, 0, h);
    out.halves = [ink(d, w, 0, w >> 1, 0, h), ink(d, w, w >> 1, w, 0, h),
                  ink(d, w, 0, w, 0, h >> 1), ink(d, w, 0, w, h >> 1, h)];
    return out;
  });
  const tables = [...document.querySelectorAll('table')];
  const empty = tables.filter(t => !t.querySelector('tbody tr')).length;
  const pre = document.createElement('pre'); pre.id = 'hhx-probe';
  pre.textContent = JSON.stringify({imgs, tables: tables.length, empty_tables: empty});
  document.body.appendChild(pre);
});
</script>
"""


def available() -> bool:
    return Path(CHROMIUM).is_file()


def inspect_page(html_path: Path, timeout: float = 60.0) -> dict:
    """Measurements of the page's images and tables as Chromium rendered them."""
    with tempfile.TemporaryDirectory(prefix="hhx-chromium-") as tmp:
        page = Path(tmp) / "page.html"
        text = html_path.read_text(encoding="utf-8")
        page.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
        profile = Path(tmp) / "profile"
        proc = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=timeout,
        )
        shutil.rmtree(profile, ignore_errors=True)
    found = re.search(r'<pre id="hhx-probe">(.*?)</pre>', proc.stdout, re.S)
    if found is None:
        raise AssertionError(f"chromium printed no probe result (rc {proc.returncode}): "
                             f"{proc.stderr.strip().splitlines()[-3:]}")
    return json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<")
                      .replace("&gt;", ">").replace("&quot;", '"'))


def dump_dom(url: str, timeout: float = 120.0, budget_ms: int = 25000) -> str:
    """The DOM of `url` (e.g. the MLflow UI) after Chromium ran its scripts for `budget_ms` of
    virtual time."""
    with tempfile.TemporaryDirectory(prefix="hhx-chromium-") as tmp:
        flags = [f for f in FLAGS if not f.startswith("--virtual-time-budget")]
        proc = subprocess.run(
            [CHROMIUM, *flags, f"--virtual-time-budget={budget_ms}", f"--user-data-dir={tmp}/p",
             "--dump-dom", url],
            capture_output=True, text=True, timeout=timeout,
        )
    if proc.returncode != 0:
        raise AssertionError(f"chromium failed on {url} (rc {proc.returncode}): "
                             f"{proc.stderr.strip().splitlines()[-3:]}")
    return proc.stdout
