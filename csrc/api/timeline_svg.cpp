#include "api/timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

namespace autograph {

namespace {

// Geometry, in pixels. Text is 11 px sans-serif: about 6.2 px per character.
constexpr double kLeft = 80, kRight = 24, kTop = 64, kRowHeight = 30, kBoxHeight = 22, kCharWidth = 6.2;
constexpr double kMinPlotWidth = 960, kMaxPlotWidth = 4800, kPixelsPerOp = 24;

struct Style {
  const char* fill;
  const char* name;
};
constexpr Style kCompute{"#4e79a7", "compute-bound"};
constexpr Style kMemory{"#f28e2b", "memory-bound"};
constexpr Style kStitched{"#59a14f", "stitched kernel"};
constexpr Style kMerged{"#b07aa1", "merged kernel"};
constexpr Style kControl{"#e15759", "control flow (TorchScript)"};

const Style& StyleOf(const TimelineOp& op, bool merged) {
  if (merged) return kMerged;
  if (op.stitched) return kStitched;
  if (op.kind == OpKind::ComputeBound) return kCompute;
  if (op.kind == OpKind::ControlFlow) return kControl;
  return kMemory;
}

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Fixed(double v, int digits = 1) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, v);
  return buffer;
}

// "aten::conv2d" -> "conv2d", "prim::mkldnn_convolution" -> "convolution": the namespace and the
// library say little in a box (the tooltip has the full name).
std::string ShortName(const std::string& op) {
  const size_t colons = op.rfind("::");
  std::string name = colons == std::string::npos ? op : op.substr(colons + 2);
  for (const char* prefix : {"mkldnn_", "cudnn_", "_"})
    if (name.rfind(prefix, 0) == 0 && name.size() > std::string(prefix).size()) name = name.substr(std::string(prefix).size());
  return name;
}

std::string Ms(double ms) { return ms >= 1 ? Fixed(ms, 2) + " ms" : Fixed(ms * 1e3, 1) + " us"; }

// A step of 1, 2 or 5 times a power of ten giving about `ticks` ticks over `total`.
double TickStep(double total, int ticks) {
  const double raw = total / std::max(1, ticks);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

// A label that fits `width` pixels, or nothing.
std::string FitLabel(const std::string& label, double width) {
  const size_t fits = static_cast<size_t>(std::max(0.0, (width - 6) / kCharWidth));
  if (fits >= label.size()) return label;
  if (fits < 5) return "";
  return label.substr(0, fits - 1) + "~";
}

class Picture {
 public:
  Picture(const Timeline& timeline, const std::string& title) : t_(timeline), title_(title) {
    size_t ops = 0;
    for (const TimelineStage& s : t_.stages)
      for (const TimelineSpan& span : s.spans) ops += s.merged ? 1 : span.ops.size();
    plot_width_ = std::clamp(kPixelsPerOp * static_cast<double>(ops) / std::max(1, t_.streams), kMinPlotWidth, kMaxPlotWidth);
    scale_ = t_.total_ms > 0 ? plot_width_ / t_.total_ms : 0;
    width_ = kLeft + plot_width_ + kRight;
    axis_y_ = kTop + kRowHeight * t_.streams + 8;
    height_ = axis_y_ + 70;
  }

  std::string Draw() {
    out_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << Fixed(width_, 0) << "\" height=\"" << Fixed(height_, 0)
         << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">\n"
         << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    Header();
    Rows();
    for (size_t i = 0; i < t_.stages.size(); ++i) Stage(i);
    Axis();
    Legend();
    out_ << "</svg>\n";
    return out_.str();
  }

 private:
  double X(double ms) const { return kLeft + ms * scale_; }
  double RowY(int stream) const { return kTop + kRowHeight * stream; }

  void Header() {
    out_ << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << Escape(title_) << "</text>\n"
         << "<text x=\"" << kLeft << "\" y=\"38\" fill=\"#444\">" << t_.stages.size() << " stages on " << t_.streams
         << (t_.streams == 1 ? " stream" : " streams") << ", " << Ms(t_.total_ms) << " " << Escape(t_.times)
         << "; box width = operator time (hover for details)</text>\n";
  }

  void Rows() {
    for (int s = 0; s < t_.streams; ++s) {
      const double y = RowY(s);
      out_ << "<rect x=\"" << kLeft << "\" y=\"" << Fixed(y) << "\" width=\"" << Fixed(plot_width_) << "\" height=\""
           << kRowHeight << "\" fill=\"" << (s % 2 ? "#f7f7f7" : "#efefef") << "\"/>\n"
           << "<text x=\"" << kLeft - 8 << "\" y=\"" << Fixed(y + kRowHeight / 2 + 4)
           << "\" text-anchor=\"end\">stream " << s << "</text>\n";
    }
  }

  // The stage's boundary line, its number above the rows when there is room, and its boxes.
  void Stage(size_t index) {
    const TimelineStage& stage = t_.stages[index];
    const double x0 = X(stage.start_ms), width = stage.ms * scale_;
    out_ << "<line x1=\"" << Fixed(x0) << "\" y1=\"" << kTop - 4 << "\" x2=\"" << Fixed(x0) << "\" y2=\""
         << Fixed(axis_y_) << "\" stroke=\"#bbb\" stroke-width=\"0.5\"/>\n";
    const std::string number = std::to_string(index);
    if (width >= number.size() * kCharWidth + 4 && x0 >= last_stage_label_end_) {
      out_ << "<text x=\"" << Fixed(x0 + 2) << "\" y=\"" << kTop - 8 << "\" fill=\"#777\" font-size=\"10\">" << number
           << "</text>\n";
      last_stage_label_end_ = x0 + number.size() * kCharWidth + 6;
    }
    if (stage.merged) {
      MergedBox(stage);
      return;
    }
    for (const TimelineSpan& span : stage.spans)
      for (const TimelineOp& op : span.ops)
        Box(op.start_ms, op.ms, span.stream, StyleOf(op, false), ShortName(op.op),
            "#" + std::to_string(op.id) + " " + op.op + " " + op.shape + (op.stitched ? " (stitched kernel)" : "") +
                ": " + Ms(op.ms) + ", stage " + number + ", stream " + std::to_string(span.stream));
  }

  void MergedBox(const TimelineStage& stage) {
    size_t count = 0;
    std::string what, detail;
    for (const TimelineSpan& span : stage.spans)
      for (const TimelineOp& op : span.ops) {
        ++count;
        if (what.empty()) what = ShortName(op.op);
        detail += "\n#" + std::to_string(op.id) + " " + op.op + " " + op.shape;
      }
    const int stream = stage.spans.empty() ? 0 : stage.spans[0].stream;
    Box(stage.start_ms, stage.ms, stream, kMerged, std::to_string(count) + "x " + what + " merged",
        "merged kernel of " + std::to_string(count) + " operators: " + Ms(stage.ms) + detail);
  }

  void Box(double start_ms, double ms, int stream, const Style& style, const std::string& label, const std::string& tip) {
    const double x = X(start_ms), w = std::max(1.0, ms * scale_), y = RowY(stream) + (kRowHeight - kBoxHeight) / 2;
    out_ << "<g><title>" << Escape(tip) << "</title><rect x=\"" << Fixed(x, 2) << "\" y=\"" << Fixed(y) << "\" width=\""
         << Fixed(w, 2) << "\" height=\"" << kBoxHeight << "\" fill=\"" << style.fill
         << "\" stroke=\"white\" stroke-width=\"0.6\"/>";
    const std::string text = FitLabel(label, w);
    if (!text.empty())
      out_ << "<text x=\"" << Fixed(x + 3) << "\" y=\"" << Fixed(y + kBoxHeight / 2 + 4) << "\" fill=\"white\">"
           << Escape(text) << "</text>";
    out_ << "</g>\n";
  }

  void Axis() {
    out_ << "<line x1=\"" << kLeft << "\" y1=\"" << Fixed(axis_y_) << "\" x2=\"" << Fixed(kLeft + plot_width_) << "\" y2=\""
         << Fixed(axis_y_) << "\" stroke=\"#333\"/>\n";
    if (t_.total_ms <= 0) return;
    const double step = TickStep(t_.total_ms, static_cast<int>(plot_width_ / 110));
    for (double ms = 0; ms <= t_.total_ms * (1 + 1e-9); ms += step) {
      const double x = X(ms);
      out_ << "<line x1=\"" << Fixed(x) << "\" y1=\"" << Fixed(axis_y_) << "\" x2=\"" << Fixed(x) << "\" y2=\""
           << Fixed(axis_y_ + 5) << "\" stroke=\"#333\"/><text x=\"" << Fixed(x) << "\" y=\"" << Fixed(axis_y_ + 18)
           << "\" text-anchor=\"middle\">" << (step >= 1 ? Fixed(ms, 0) : step >= 0.1 ? Fixed(ms, 1) : Fixed(ms, 3))
           << (ms == 0 ? " ms" : "") << "</text>\n";
    }
  }

  void Legend() {
    double x = kLeft;
    const double y = axis_y_ + 42;
    for (const Style* s : {&kCompute, &kMemory, &kStitched, &kMerged, &kControl}) {
      out_ << "<rect x=\"" << Fixed(x) << "\" y=\"" << Fixed(y - 10) << "\" width=\"12\" height=\"12\" fill=\"" << s->fill
           << "\"/><text x=\"" << Fixed(x + 16) << "\" y=\"" << Fixed(y) << "\">" << s->name << "</text>\n";
      x += 16 + std::string(s->name).size() * kCharWidth + 18;
    }
  }

  const Timeline& t_;
  std::string title_;
  std::ostringstream out_;
  double plot_width_ = 0, scale_ = 0, width_ = 0, height_ = 0, axis_y_ = 0;
  double last_stage_label_end_ = 0;
};

}  // namespace

std::string TimelineSvg(const Timeline& timeline, const std::string& title) {
  return Picture(timeline, title).Draw();
}

}  // namespace autograph
