// Package testkit is what every test of the project shares, the receiver's and e2e's alike: the one rule
// for what CI is and what a missing peer costs there (ci.go), the one Debian package installer
// (install.go), goldens that fail the run that rewrites them, all behind one switch (golden.go), and
// fake root_path trees in the kernel's shape (fakeroot.go). Walks over pdata are in pdatawalk, which
// imports no testing code so that the QEMU guest programs use them too.
//
// Only tests import testkit: it runs apt-get, which the receiver never may (the receiver's TestLayout
// checks that nothing it is built from depends on it).
package testkit // import "github.com/diskhealth/diskhealth/internal/testkit"
