// Package web will hold the dashboard's static assets and their embed
// (issue 9). It holds no logic and imports nothing of skiff's.
package web
