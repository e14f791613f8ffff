// HTTP status codes and their reason phrases (RFC 9110 section 15), for
// handlers and for every layer of edri that answers.
#pragma once

#include <string_view>

namespace edri {

// A status code: the standard ones have names, any other is its number.
struct Status {
  int code;
  constexpr Status(int c) : code(c) {}  // implicit: `Response::json(x, 201)` reads well
  constexpr operator int() const { return code; }

  static constexpr int Continue = 100, SwitchingProtocols = 101;
  static constexpr int Ok = 200, Created = 201, Accepted = 202, NoContent = 204, PartialContent = 206;
  static constexpr int MovedPermanently = 301, Found = 302, SeeOther = 303, NotModified = 304, TemporaryRedirect = 307,
                       PermanentRedirect = 308;
  static constexpr int BadRequest = 400, Unauthorized = 401, Forbidden = 403, NotFound = 404, MethodNotAllowed = 405,
                       RequestTimeout = 408, Conflict = 409, LengthRequired = 411, PreconditionFailed = 412,
                       ContentTooLarge = 413, UriTooLong = 414, UnsupportedMediaType = 415, RangeNotSatisfiable = 416,
                       ExpectationFailed = 417, UnprocessableContent = 422, TooManyRequests = 429,
                       RequestHeaderFieldsTooLarge = 431;
  static constexpr int InternalServerError = 500, NotImplemented = 501, BadGateway = 502, ServiceUnavailable = 503,
                       GatewayTimeout = 504, HttpVersionNotSupported = 505;
};

// The reason phrase of `status`; for a code without one, its class.
constexpr std::string_view reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default:
      return status < 200   ? "Informational"
             : status < 300 ? "Success"
             : status < 400 ? "Redirection"
             : status < 500 ? "Client Error"
                            : "Server Error";
  }
}

}  // namespace edri
