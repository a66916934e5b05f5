// Package docs holds the project's reference pages (README.md is the newcomer's page and links here). Its
// tests keep the Markdown navigable: every relative link resolves, and the README stays one page.
package docs // import "github.com/diskhealth/diskhealth/docs"
