// The sweep chart: well-formed XML that a real browser (headless Chromium from Debian) parses
// and draws — checked by dumping the DOM and by decoding a screenshot's pixels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/svg_plot.h"
#include "common/fixtures.h"

namespace strata::bench {
namespace {

namespace fs = std::filesystem;

BenchServeResult sample_sweep() {
  BenchServeResult result;
  result.model = "model <with> \"markup\" & more";
  result.request_url = "http://127.0.0.1:8080/v1/completions";
  const int64_t levels[] = {1, 4, 16, 64};
  for (int i = 0; i < 4; ++i) {
    BenchRun run;
    run.max_concurrency = levels[i];
    BenchMetrics& m = run.metrics;
    m.completed = 100;
    m.output_throughput = 100.0 * (i + 1);
    m.total_token_throughput = 180.0 * (i + 1);
    m.request_throughput = 2.0 * (i + 1);
    m.ttft_ms = summarize({10.0 * (i + 1), 20.0 * (i + 1), 40.0 * (i + 1)});
    m.itl_ms = summarize({5.0 + i, 6.0 + i, 9.0 + 2 * i});
    result.runs.push_back(std::move(run));
  }
  return result;
}

// Decodes an 8-bit RGB/RGBA PNG (zlib + the five row filters) and counts pixels near each color.
const char* kPngStats = R"PY(
import collections, json, struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n'
pos, idat = 8, b''
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8]); body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    if kind == b'IDAT': idat += body
assert depth == 8 and ctype in (2, 6)
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat); stride = w * bpp
rows, prev, off = [], bytearray(stride), 0
for y in range(h):
    f = raw[off]; line = bytearray(raw[off + 1:off + 1 + stride]); off += 1 + stride
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0; b = prev[i]; c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
histogram = collections.Counter()
for line in rows: histogram.update(zip(line[0::bpp], line[1::bpp], line[2::bpp]))
targets = [tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in sys.argv[2:]]
counts = [sum(n for px, n in histogram.items() if all(abs(px[j] - t[j]) <= 12 for j in range(3))) for t in targets]
nonwhite = w * h - histogram[(255, 255, 255)]
print(json.dumps({'width': w, 'height': h, 'nonwhite': nonwhite, 'counts': counts}))
)PY";

class SvgPlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_svg_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  test::CommandResult chromium(const std::vector<std::string>& extra, const std::string& url) {
    // Niced: the browser must not starve the timing tests that ctest runs beside it.
    std::vector<std::string> argv = {"nice",
                                     "-n",
                                     "19",
                                     "timeout",
                                     "90",
                                     "chromium",
                                     "--headless",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--disable-background-networking",
                                     "--disable-component-update",
                                     "--no-first-run",
                                     "--disable-sync",
                                     "--user-data-dir=" + (dir_ / "profile").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(url);
    return test::run_command(argv);
  }

  fs::path dir_;
};

TEST(SvgPlot, EscapesText) {
  EXPECT_EQ(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  const std::string svg = render_sweep_svg(sample_sweep());
  EXPECT_EQ(svg.find("<with>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;with&gt;"), std::string::npos);
}

TEST_F(SvgPlotTest, ChromiumParsesTheDocument) {
  const fs::path svg = dir_ / "sweep.svg";
  std::ofstream(svg) << render_sweep_svg(sample_sweep());
  const auto dom = chromium({"--dump-dom"}, "file://" + svg.string());
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  EXPECT_EQ(dom.out.find("parsererror"), std::string::npos) << dom.out.substr(0, 2000);
  EXPECT_NE(dom.out.find("<svg"), std::string::npos);
  // 2 throughput + 1 request-rate + 3 TTFT + 3 ITL series.
  size_t polylines = 0;
  for (size_t p = dom.out.find("<polyline"); p != std::string::npos; p = dom.out.find("<polyline", p + 1))
    ++polylines;
  EXPECT_EQ(polylines, 9u);

  // A broken document is reported by the same check (so the check can fail).
  const fs::path broken = dir_ / "broken.svg";
  std::ofstream(broken) << "<svg xmlns=\"http://www.w3.org/2000/svg\"><rect></svg>";
  const auto bad = chromium({"--dump-dom"}, "file://" + broken.string());
  EXPECT_NE(bad.out.find("parsererror"), std::string::npos);
}

TEST_F(SvgPlotTest, ChromiumDrawsEverySeries) {
  const fs::path svg = dir_ / "sweep.svg", png = dir_ / "shot.png";
  std::ofstream(svg) << render_sweep_svg(sample_sweep());
  const auto shot = chromium({"--screenshot=" + png.string(), "--window-size=960,700", "--hide-scrollbars"},
                             "file://" + svg.string());
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(fs::exists(png)) << shot.err;
  std::vector<std::string> argv = {"/usr/bin/python3", "-c", kPngStats, png.string()};
  for (const char* c : kPlotColors) argv.push_back(c);
  const auto stats = test::run_command(argv);
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const auto j = nlohmann::json::parse(stats.out);
  EXPECT_EQ(j["width"], 960);
  EXPECT_EQ(j["height"], 700);
  // Lines, markers and legend swatches of each color: hundreds of pixels each.
  for (const auto& count : j["counts"]) EXPECT_GT(count.get<int>(), 300) << j.dump();
  const double nonwhite = j["nonwhite"].get<double>() / (960.0 * 700.0);
  EXPECT_GT(nonwhite, 0.02) << j.dump();
  EXPECT_LT(nonwhite, 0.5) << j.dump();
}

}  // namespace
}  // namespace strata::bench
