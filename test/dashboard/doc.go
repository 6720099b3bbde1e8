// Package dashboard tests the web dashboard in a real browser: Debian's
// chromium, headless, driven by chromedp against a real server (server.Run
// on a real SQLite file, TLS on 127.0.0.1). The browser may reach only
// 127.0.0.1. Screenshots (light, dark, phone width) are written to
// $SKIFF_ARTIFACTS/dashboard when that is set, else to the test's artifact
// directory (go test -artifacts keeps it); the test logs where.
//
// `make test` installs chromium when it is missing; the test fails, and
// does not skip, when it cannot find it.
package dashboard
