// Package web holds the dashboard: hand-written HTML, CSS and JavaScript
// modules under static/, embedded in the binary, and Handler, which
// serves them. There is no build step and no npm: the files are served
// as they are in the repository.
//
// Errors are answered with a Kubernetes Status body, as the API does.
//
// The assets are public (they hold no data and no secrets); every API
// call the page makes carries the admin token the operator typed in,
// kept in the tab's sessionStorage. The package holds no logic of
// skiff's and imports nothing of skiff's; the server mounts Handler at /.
package web
