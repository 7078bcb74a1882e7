//go:build !linux

package dynamotest

import "syscall"

// sysProcAttr has no parent-death signal to set outside Linux; Main's stop is the only cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }
