// Command idle measures what `make up` costs: how long hack/up.sh takes from
// built binaries to a Ready node, and the idle memory of every daemon it
// starts (RSS, and its anonymous part: the heap and stacks, as opposed to
// the binary's pages the kernel can drop and share).
//
//	go run ./test/bench/idle -settle 30s     (as root; make build first)
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	settle := flag.Duration("settle", 30*time.Second, "how long the cluster idles before memory is read")
	flag.Parse()
	if err := run(*settle); err != nil {
		fmt.Fprintln(os.Stderr, "idle:", err)
		os.Exit(1)
	}
}

// env gives the cluster its own directory, ports, bridge and pod range so
// that it never meets a cluster of `make up` on the same host.
func env(dir string) []string {
	return append(os.Environ(),
		"KUBE_LITE_DIR="+dir, "KUBE_LITE_PORT=16611", "KUBE_LITE_SCHEDULER_PORT=16612",
		"KUBE_LITE_CM_PORT=16613", "KUBE_LITE_KUBELET_PORT=16614", "KUBE_LITE_KUBELET_HEALTHZ_PORT=16615",
		"KUBE_LITE_BRIDGE=kl-idle0", "KUBE_LITE_CLUSTER_CIDR=10.231.0.0/16", "KUBE_LITE_NODE=idle-bench")
}

func script(dir, name string, extra ...string) error {
	cmd := exec.Command("hack/"+name, extra...)
	cmd.Env = append(env(dir), "PURGE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("hack/%s: %w\n%s", name, err, out)
	}
	return nil
}

func run(settle time.Duration) error {
	if os.Getuid() != 0 {
		return fmt.Errorf("needs root (it runs make up)")
	}
	dir, err := os.MkdirTemp("", "kube-lite-idle")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Images are built beforehand: make up builds them only once per directory.
	if out, err := exec.Command("hack/images.sh", filepath.Join(dir, "images")).CombinedOutput(); err != nil {
		return fmt.Errorf("hack/images.sh: %w\n%s", err, out)
	}
	start := time.Now()
	if err := script(dir, "up.sh"); err != nil {
		return err
	}
	up := time.Since(start)
	defer func() { _ = script(dir, "down.sh") }()
	time.Sleep(settle)

	fmt.Printf("make up (hack/up.sh) from built binaries to a Ready node: %.1f s\n\n", up.Seconds())
	fmt.Printf("%-20s %10s %10s\n", "daemon (idle)", "RSS MiB", "anon MiB")
	var ctlRSS, ctlAnon float64
	for _, name := range []string{"apiserver", "scheduler", "controller-manager", "kubelet"} {
		rss, anon, err := memory(filepath.Join(dir, "run", name+".pid"))
		if err != nil {
			return err
		}
		fmt.Printf("%-20s %10.1f %10.1f\n", name, rss, anon)
		if name != "kubelet" {
			ctlRSS, ctlAnon = ctlRSS+rss, ctlAnon+anon
		}
	}
	fmt.Printf("%-20s %10.1f %10.1f\n", "control plane", ctlRSS, ctlAnon)
	return nil
}

// memory reads a process's RSS and anonymous memory in MiB.
func memory(pidFile string) (rss, anon float64, err error) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, 0, err
	}
	f, err := os.Open(filepath.Join("/proc", strings.TrimSpace(string(b)), "smaps_rollup"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "Rss:":
			rss = kb / 1024
		case "Anonymous:":
			anon = kb / 1024
		}
	}
	return rss, anon, sc.Err()
}
