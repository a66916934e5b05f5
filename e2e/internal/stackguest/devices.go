//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The guest's devices: the scsi_debug disks, device numbers, device-mapper names, sysfs files.

// scsiDebugDisks returns n scsi_debug disks, adding hosts with their own stores until there are.
func scsiDebugDisks(n int) ([]string, error) {
	list := func() []string {
		var out []string
		ents, _ := os.ReadDir("/sys/block")
		for _, e := range ents {
			if m, err := readFile(filepath.Join("/sys/block", e.Name(), "device", "model")); err == nil && strings.TrimSpace(m) == "scsi_debug" {
				out = append(out, e.Name())
			}
		}
		return out
	}
	const drv = "/sys/bus/pseudo/drivers/scsi_debug/"
	if err := os.WriteFile(drv+"per_host_store", []byte("1"), 0o644); err != nil {
		return nil, fmt.Errorf("scsi_debug per_host_store: %w", err)
	}
	for range n - len(list()) {
		if err := os.WriteFile(drv+"add_host", []byte("1"), 0o644); err != nil {
			return nil, fmt.Errorf("scsi_debug add_host: %w", err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if l := list(); len(l) >= n {
			return l[:n], nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("fewer than %d scsi_debug disks: %v", n, list())
}

// devNum is a block device's major:minor.
func devNum(name string) string {
	s, _ := readFile("/sys/block/" + name + "/dev")
	return strings.TrimSpace(s)
}

// dmDev is the dm-N name of the dm device called name.
func dmDev(name string) (string, error) {
	ents, _ := os.ReadDir("/sys/block")
	for _, e := range ents {
		if n, err := readFile(filepath.Join("/sys/block", e.Name(), "dm", "name")); err == nil && strings.TrimSpace(n) == name {
			return e.Name(), nil
		}
	}
	return "", fmt.Errorf("no dm device is called %s", name)
}

func waitFile(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %v", path, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
