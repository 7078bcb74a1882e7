package dynamotest

import "syscall"

// sysProcAttr makes the kernel kill moto when the thread that started it dies: a test binary
// stopped by -timeout or a signal never reaches Main's stop.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
