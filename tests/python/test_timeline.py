"""`autograph optimize --timeline FILE.svg` and report["timeline"] from Python: the kept schedule drawn
as stages x streams. The SVG is checked as a user would look at it — every launched operator of the
schedule has its box, boxes stay inside the plot and inside their stream's row, labels fit their boxes,
stage numbers do not overlap — and rendered to PNG (with CairoSVG, which scripts/setup.sh installs)."""
import json
import re
import subprocess
import xml.etree.ElementTree as ET

import torch

import autograph

SVG = "{http://www.w3.org/2000/svg}"
CHAR_WIDTH = 6.2  # px per character at the picture's 11 px font (timeline_svg.cpp)


def check_picture(svg_text: str, report: dict, png_path=None):
    root = ET.fromstring(svg_text)
    width, height = float(root.get("width")), float(root.get("height"))
    timeline = report["timeline"]
    rows = [r for r in root.iter(f"{SVG}rect") if r.get("height") == "30"]
    assert len(rows) == timeline["streams"]
    plot_left = float(rows[0].get("x"))
    plot_right = plot_left + float(rows[0].get("width"))
    assert plot_right <= width
    row_spans = sorted((float(r.get("y")), float(r.get("y")) + 30) for r in rows)
    boxes = 0
    for g in root.iter(f"{SVG}g"):
        rect, text = g.find(f"{SVG}rect"), g.find(f"{SVG}text")
        x, w, y = float(rect.get("x")), float(rect.get("width")), float(rect.get("y"))
        assert plot_left - 0.01 <= x and x + w <= plot_right + 1.01, g.find(f"{SVG}title").text
        assert any(top <= y and y + 22 <= bottom for top, bottom in row_spans)
        if text is not None:
            assert float(text.get("x")) + len(text.text) * CHAR_WIDTH <= x + w + 1e-6, f"{text.text!r} overflows"
        boxes += 1
    # One box per launched operator, a merged stage one box in all.
    expected = sum(1 if s["merged"] else sum(len(sp["ops"]) for sp in s["spans"]) for s in timeline["stages"])
    assert boxes == expected > 0
    # Stage numbers above the rows, left to right without overlapping.
    numbers = [t for t in root.iter(f"{SVG}text") if t.get("font-size") == "10"]
    ends = [(float(t.get("x")), float(t.get("x")) + len(t.text) * CHAR_WIDTH) for t in numbers]
    assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:]))
    if png_path is not None:
        try:
            import cairosvg
        except ImportError:  # a machine without it (the GPU image): the checks above still ran
            return
        cairosvg.svg2png(bytestring=svg_text.encode(), write_to=str(png_path))
        with open(png_path, "rb") as f:
            head = f.read(24)
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        assert (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")) == (round(width), round(height))


def test_cli_draws_the_kept_schedule(cli, zoo, tmp_path):
    svg = tmp_path / "squeezenet.svg"
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "sq.pt"), "--method", "nimble",
                        "--input-shape", "1,3,64,64", "--timeline", str(svg), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["timeline_svg"] == str(svg)
    timeline = report["timeline"]
    assert len(timeline["stages"]) == report["stages"]
    assert timeline["times"].startswith("predicted by analytical:")
    launched = sum(len(sp["ops"]) for s in timeline["stages"] for sp in s["spans"])
    assert launched == report["operators_after"] or any(s["merged"] for s in timeline["stages"])
    text = svg.read_text()
    assert "squeezenet.pt: nimble schedule on cpu" in text
    assert re.search(r">\d+ stages on \d+ streams?, ", text)
    check_picture(text, report, tmp_path / "squeezenet.png")


def test_python_report_has_the_timeline_and_its_picture(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 8, 1)).eval()
    _, report = autograph.optimize(model, [torch.randn(1, 3, 32, 32)], method="autograph", verify=0, check_rewrites=False)
    svg = report["timeline"]["svg"]
    assert svg.startswith("<svg") and "Sequential: autograph schedule on cpu" in svg
    check_picture(svg, report, tmp_path / "sequential.png")


def test_timeline_to_an_unwritable_place_is_a_clear_error(cli, zoo, tmp_path):
    r = subprocess.run([cli, "optimize", str(zoo / "squeezenet.pt"), "-o", str(tmp_path / "sq.pt"), "--method", "sequential",
                        "--input-shape", "1,3,32,32", "--timeline", "/nonexistent/dir/t.svg"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "/nonexistent/dir/t.svg" in r.stderr and "Traceback" not in r.stderr and "terminate" not in r.stderr
