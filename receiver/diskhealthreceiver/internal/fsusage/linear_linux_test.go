package fsusage

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/diskhealth/diskhealth/internal/testkit"
)

// synthStacked is n mounts on one mount point, each over the one before (a loop that mounts without
// unmounting): one group of n for the shadow rule.
func synthStacked(n int) []byte {
	var b bytes.Buffer
	b.WriteString("1 0 8:0 / / rw - ext4 /dev/sda rw\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "%d %d 0:%d / /mnt rw,relatime - tmpfs tmpfs rw\n", i+1, max(i, 2), 100+i)
	}
	return b.Bytes()
}

// Choosing the mounts to report costs the same per line at 5 000 mounts (the largest table the tests
// and benchmarks use) and at 50 000, whatever the table's shape: a Kubernetes node, distinct local
// filesystems, or every mount stacked on one mount point.
func TestSelectLinearInMounts(t *testing.T) {
	for name, synth := range map[string]func(int) []byte{"k8s": synthK8s, "distinct": synthDistinct, "stacked": synthStacked} {
		t.Run(name, func(t *testing.T) {
			testkit.RequireLinear(t, name+" mounts", 5000, testkit.ThreadCPU, func(n int) func() {
				data := synth(n)
				return func() {
					if _, err := Select(data, SelectOptions{RootPath: "/hostfs"}); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
}
