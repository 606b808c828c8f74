// SSE parsing: events must come out the same however the byte stream is split.
#include <gtest/gtest.h>

#include <random>

#include "bench/sse_parser.h"

namespace strata::bench {
namespace {

std::vector<SseEvent> parse_in_pieces(const std::string& stream, const std::vector<size_t>& cuts) {
  SseParser parser;
  std::vector<SseEvent> events;
  size_t prev = 0;
  for (size_t cut : cuts) {
    EXPECT_TRUE(parser.feed(std::string_view(stream).substr(prev, cut - prev), events));
    prev = cut;
  }
  EXPECT_TRUE(parser.feed(std::string_view(stream).substr(prev), events));
  parser.finish(events);
  return events;
}

// A stream exercising every line ending, comments, multi-line data, ignored fields, an
// event type, an event with no data (not dispatched) and a final event missing its blank line.
const std::string kStream =
    ": keep-alive comment\r\n"
    "data: {\"a\":1}\r\n\r\n"
    "event: error\n"
    "data: first line\n"
    "data:second line\n"
    "id: 7\n"
    "retry: 100\n"
    "\n"
    "event: only-type\r\r"
    "data\n\n"
    "data: [DONE]\r"
    "\r"
    "data:  two spaces\n"
    "unknown: field\n"
    "data: tail";

void expect_reference_events(const std::vector<SseEvent>& events) {
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].type, "");
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[1].type, "error");
  EXPECT_EQ(events[1].data, "first line\nsecond line");
  EXPECT_EQ(events[2].type, "");  // the type of the data-less event was reset with it
  EXPECT_EQ(events[2].data, "");  // "data" without a colon is an empty data line
  EXPECT_EQ(events[3].data, "[DONE]");
  EXPECT_EQ(events[4].data, " two spaces\ntail");  // only one leading space is removed
}

TEST(SseParser, WholeStream) {
  expect_reference_events(parse_in_pieces(kStream, {}));
}

TEST(SseParser, EverySingleSplitPoint) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    SCOPED_TRACE(cut);
    expect_reference_events(parse_in_pieces(kStream, {cut}));
  }
}

TEST(SseParser, ByteByByte) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  expect_reference_events(parse_in_pieces(kStream, cuts));
}

TEST(SseParser, RandomSplits) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < kStream.size(); ++i)
      if (rng() % 4 == 0) cuts.push_back(i);
    expect_reference_events(parse_in_pieces(kStream, cuts));
  }
}

TEST(SseParser, CrLfSplitAcrossFeedsIsOneLineEnd) {
  // "\r" ends one feed and "\n" starts the next: one line end, not a blank line between.
  SseParser parser;
  std::vector<SseEvent> events;
  parser.feed("data: x\r", events);
  parser.feed("\ndata: y\r", events);
  parser.feed("\n\r\n", events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x\ny");
}

TEST(SseParser, OversizedEventFails) {
  SseParser parser(64);
  std::vector<SseEvent> events;
  EXPECT_TRUE(parser.feed("data: " + std::string(40, 'a') + "\n", events));
  EXPECT_FALSE(parser.feed("data: " + std::string(40, 'b'), events));
  EXPECT_TRUE(parser.failed());
  EXPECT_FALSE(parser.feed("\n\n", events));  // stays failed
  EXPECT_TRUE(events.empty());
}

TEST(SseParser, UnterminatedLineWithoutNewlineIsBounded) {
  SseParser parser(1000);
  std::vector<SseEvent> events;
  bool ok = true;
  for (int i = 0; i < 100 && ok; ++i) ok = parser.feed(std::string(100, 'z'), events);
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace strata::bench
