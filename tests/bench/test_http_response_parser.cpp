// HTTP/1.1 response framing: chunked, content-length and close-delimited bodies, split anywhere.
#include <gtest/gtest.h>

#include "bench/http_response_parser.h"

namespace strata::bench {
namespace {

using State = HttpResponseParser::State;

struct Parsed {
  State state;
  int status;
  std::string body;
  std::string error;
};

Parsed parse(const std::string& bytes, size_t cut, bool eof) {
  HttpResponseParser p;
  std::string body;
  p.feed(std::string_view(bytes).substr(0, cut), body);
  p.feed(std::string_view(bytes).substr(cut), body);
  if (eof) p.finish_eof();
  return {p.state(), p.status(), body, p.error()};
}

// Body "hello world, this is SSE" in three chunks, one with an extension, then a trailer.
const std::string kChunked =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: text/event-stream\r\n"
    "transfer-encoding:  Chunked \r\n"
    "\r\n"
    "5\r\nhello\r\n"
    "7;name=value\r\n world,\r\n"
    "C\r\n this is SSE\r\n"
    "0\r\n"
    "X-Trailer: 1\r\n"
    "\r\n"
    "GARBAGE AFTER THE RESPONSE";

TEST(HttpResponseParser, ChunkedAtEverySplitPoint) {
  for (size_t cut = 0; cut <= kChunked.size(); ++cut) {
    SCOPED_TRACE(cut);
    const Parsed p = parse(kChunked, cut, false);
    EXPECT_EQ(p.state, State::kDone) << p.error;
    EXPECT_EQ(p.status, 200);
    EXPECT_EQ(p.body, "hello world, this is SSE");
  }
}

TEST(HttpResponseParser, ChunkedByteByByteAndHeaders) {
  HttpResponseParser p;
  std::string body;
  for (char c : kChunked) p.feed(std::string_view(&c, 1), body);
  EXPECT_EQ(p.state(), State::kDone);
  EXPECT_EQ(body, "hello world, this is SSE");
  EXPECT_EQ(p.header("CONTENT-TYPE"), "text/event-stream");
  EXPECT_EQ(p.header("x-missing"), "");
}

TEST(HttpResponseParser, ContentLength) {
  const std::string r = "HTTP/1.0 404 Not Found\nContent-Length: 11\n\n{\"error\":1}extra";
  for (size_t cut = 0; cut <= r.size(); ++cut) {
    const Parsed p = parse(r, cut, false);
    EXPECT_EQ(p.state, State::kDone);
    EXPECT_EQ(p.status, 404);
    EXPECT_EQ(p.body, "{\"error\":1}");
  }
}

TEST(HttpResponseParser, CloseDelimitedBodyEndsAtEof) {
  const std::string r = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n";
  const Parsed open = parse(r, 20, false);
  EXPECT_EQ(open.state, State::kBody);
  const Parsed closed = parse(r, 20, true);
  EXPECT_EQ(closed.state, State::kDone);
  EXPECT_EQ(closed.body, "data: x\n\n");
}

TEST(HttpResponseParser, InterimContinueIsSkipped) {
  const std::string r = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
  for (size_t cut = 0; cut <= r.size(); ++cut) {
    const Parsed p = parse(r, cut, false);
    EXPECT_EQ(p.status, 201);
    EXPECT_EQ(p.body, "ok");
  }
}

TEST(HttpResponseParser, MalformedResponsesAreErrors) {
  const char* bad[] = {
      "HTTP/1.1 2x0 OK\r\n\r\n",                                                    // status digits
      "SPDY/3 200 OK\r\n\r\n",                                                      // protocol
      "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",                                   // header line
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",                // chunk size
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXX\r\n",         // CRLF after data
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n",  // too big
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",                         // unsupported
      "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n",                              // length
  };
  for (const char* r : bad) {
    SCOPED_TRACE(r);
    const Parsed p = parse(r, 0, false);
    EXPECT_EQ(p.state, State::kError);
    EXPECT_FALSE(p.error.empty());
  }
}

TEST(HttpResponseParser, TruncatedResponsesAreErrorsAtEof) {
  EXPECT_EQ(parse("", 0, true).state, State::kError);
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nContent-", 0, true).state, State::kError);
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, true).state, State::kError);
  EXPECT_EQ(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", 0, true).state,
            State::kError);
}

TEST(HttpResponseParser, HeaderFloodIsBounded) {
  HttpResponseParser p;
  std::string body;
  p.feed("HTTP/1.1 200 OK\r\n", body);
  State s = State::kHeaders;
  for (int i = 0; i < 10000 && s == State::kHeaders; ++i) s = p.feed("X-Filler: aaaaaaaaaaaaaaaa\r\n", body);
  EXPECT_EQ(s, State::kError);
}

TEST(HttpResponseParser, EndlessChunkSizeLineIsBounded) {
  HttpResponseParser p;
  std::string body;
  p.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;", body);
  State s = State::kBody;
  for (int i = 0; i < 1000 && s == State::kBody; ++i) s = p.feed(std::string(100, 'x'), body);
  EXPECT_EQ(s, State::kError);
}

}  // namespace
}  // namespace strata::bench
