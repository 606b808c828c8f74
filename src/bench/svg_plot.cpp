#include "bench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/check.h"

namespace strata::bench {
namespace {

struct Series {
  std::string name;
  std::vector<double> y;  // one per run; NaN = missing
};

struct Panel {
  std::string title, y_label;
  std::vector<Series> series;
};

constexpr double kPanelW = 480, kPanelH = 330;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;  // margins inside a panel

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The smallest "nice" number (1, 2, 2.5, 5 times a power of ten) >= v.
double nice_ceil(double v) {
  if (!(v > 0.0)) return 1.0;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * p >= v * (1 - 1e-12)) return m * p;
  return 10.0 * p;
}

class XScale {
 public:
  explicit XScale(const std::vector<double>& xs) {
    lo_ = *std::min_element(xs.begin(), xs.end());
    hi_ = *std::max_element(xs.begin(), xs.end());
    log_ = lo_ > 0 && hi_ / lo_ >= 8.0;  // levels like 1,4,16,64 spread evenly on a log axis
  }
  // Position in [0, 1] across the plot area.
  double operator()(double x) const {
    if (hi_ == lo_) return 0.5;
    if (log_) return (std::log(x) - std::log(lo_)) / (std::log(hi_) - std::log(lo_));
    return (x - lo_) / (hi_ - lo_);
  }
  bool log() const { return log_; }

 private:
  double lo_, hi_;
  bool log_;
};

void draw_panel(std::ostringstream& svg, const Panel& panel, const std::vector<double>& xs, double ox,
                double oy) {
  const double w = kPanelW - kLeft - kRight, h = kPanelH - kTop - kBottom;
  const XScale xscale(xs);
  double y_max = 0.0;
  for (const Series& s : panel.series)
    for (double v : s.y)
      if (std::isfinite(v)) y_max = std::max(y_max, v);
  y_max = nice_ceil(y_max * 1.05);
  auto px = [&](double x) { return kLeft + xscale(x) * w; };
  auto py = [&](double y) { return kTop + h - y / y_max * h; };

  svg << "<g transform=\"translate(" << num(ox) << "," << num(oy) << ")\">\n";
  svg << "<text x=\"" << num(kPanelW / 2) << "\" y=\"22\" text-anchor=\"middle\" class=\"title\">"
      << xml_escape(panel.title) << "</text>\n";
  svg << "<rect x=\"" << num(kLeft) << "\" y=\"" << num(kTop) << "\" width=\"" << num(w) << "\" height=\""
      << num(h) << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (int i = 0; i <= 5; ++i) {  // horizontal grid and y labels
    const double v = y_max * i / 5.0;
    svg << "<line x1=\"" << num(kLeft) << "\" x2=\"" << num(kLeft + w) << "\" y1=\"" << num(py(v))
        << "\" y2=\"" << num(py(v)) << "\" stroke=\"#ddd\"/>\n";
    svg << "<text x=\"" << num(kLeft - 6) << "\" y=\"" << num(py(v) + 4) << "\" text-anchor=\"end\">"
        << num(v) << "</text>\n";
  }
  for (double x : xs) {  // a tick and label per concurrency level
    svg << "<line x1=\"" << num(px(x)) << "\" x2=\"" << num(px(x)) << "\" y1=\"" << num(kTop + h)
        << "\" y2=\"" << num(kTop + h + 5) << "\" stroke=\"#444\"/>\n";
    svg << "<text x=\"" << num(px(x)) << "\" y=\"" << num(kTop + h + 18) << "\" text-anchor=\"middle\">"
        << num(x) << "</text>\n";
  }
  svg << "<text x=\"" << num(kLeft + w / 2) << "\" y=\"" << num(kPanelH - 8) << "\" text-anchor=\"middle\">"
      << (xscale.log() ? "max concurrency (log scale)" : "max concurrency") << "</text>\n";
  svg << "<text transform=\"translate(16," << num(kTop + h / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
      << xml_escape(panel.y_label) << "</text>\n";
  for (size_t s = 0; s < panel.series.size(); ++s) {
    const char* color = kPlotColors[s % 3];
    std::string points;
    for (size_t i = 0; i < xs.size(); ++i) {
      if (!std::isfinite(panel.series[s].y[i])) continue;
      points += num(px(xs[i])) + "," + num(py(panel.series[s].y[i])) + " ";
      svg << "<circle cx=\"" << num(px(xs[i])) << "\" cy=\"" << num(py(panel.series[s].y[i]))
          << "\" r=\"4\" fill=\"" << color << "\"/>\n";
    }
    svg << "<polyline points=\"" << points << "\" fill=\"none\" stroke=\"" << color
        << "\" stroke-width=\"2.5\"/>\n";
    const double ly = kTop + 14 + 18 * static_cast<double>(s);  // legend, top-left inside the frame
    svg << "<rect x=\"" << num(kLeft + 10) << "\" y=\"" << num(ly - 9)
        << "\" width=\"14\" height=\"10\" fill=\"" << color << "\"/>\n";
    svg << "<text x=\"" << num(kLeft + 30) << "\" y=\"" << num(ly) << "\">"
        << xml_escape(panel.series[s].name) << "</text>\n";
  }
  svg << "</g>\n";
}

std::vector<Panel> make_panels(const BenchServeResult& result) {
  Panel tokens{"Token throughput", "tokens/s", {{"output tok/s", {}}, {"total tok/s", {}}}};
  Panel requests{"Request throughput", "requests/s", {{"requests/s", {}}}};
  Panel ttft{"Time to first token", "TTFT (ms)", {{"p50", {}}, {"p90", {}}, {"p99", {}}}};
  Panel itl{"Inter-token latency", "ITL (ms)", {{"p50", {}}, {"p90", {}}, {"p99", {}}}};
  const bool goodput = !result.runs.empty() && result.runs.front().metrics.goodput.has_value();
  if (goodput) requests.series.push_back({"goodput req/s", {}});
  for (const BenchRun& run : result.runs) {
    const BenchMetrics& m = run.metrics;
    tokens.series[0].y.push_back(m.output_throughput);
    tokens.series[1].y.push_back(m.total_token_throughput);
    requests.series[0].y.push_back(m.request_throughput);
    if (goodput) requests.series[1].y.push_back(m.goodput.value_or(NAN));
    for (Panel* p : {&ttft, &itl}) {
      const Distribution& d = p == &ttft ? m.ttft_ms : m.itl_ms;
      p->series[0].y.push_back(d.median);
      p->series[1].y.push_back(d.p90);
      p->series[2].y.push_back(d.p99);
    }
  }
  return {tokens, requests, ttft, itl};
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_sweep_svg(const BenchServeResult& result) {
  STRATA_CHECK(!result.runs.empty(), "render_sweep_svg: no runs");
  std::vector<double> xs;
  for (const BenchRun& run : result.runs) {
    STRATA_CHECK(run.max_concurrency > 0, "render_sweep_svg: a sweep level must be positive");
    xs.push_back(static_cast<double>(run.max_concurrency));
  }
  const double width = 2 * kPanelW, height = 2 * kPanelH + 40;
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << num(width) << "\" height=\""
      << num(height) << "\" viewBox=\"0 0 " << num(width) << " " << num(height) << "\">\n"
      << "<style>text { font-family: sans-serif; font-size: 12px; fill: #222; } "
         ".title { font-size: 15px; font-weight: bold; }</style>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text x=\"" << num(width / 2) << "\" y=\"26\" text-anchor=\"middle\" class=\"title\">"
      << xml_escape("strata bench serve: " + result.model + " at " + result.request_url) << "</text>\n";
  const std::vector<Panel> panels = make_panels(result);
  for (size_t i = 0; i < panels.size(); ++i)
    draw_panel(svg, panels[i], xs, kPanelW * static_cast<double>(i % 2),
               40 + kPanelH * static_cast<double>(i / 2));
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace strata::bench
