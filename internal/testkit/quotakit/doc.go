// Package quotakit sets up what the project quota tests need without any tool: a loop device over an
// image file, a directory's project ID (chattr -p ID +P, xfs_quota's project -s) and a project's limits
// (setquota -P). It imports no testing code, so that the QEMU guest programs use it too; Linux only.
package quotakit // import "github.com/diskhealth/diskhealth/internal/testkit/quotakit"
