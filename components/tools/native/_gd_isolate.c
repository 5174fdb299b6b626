/* The sandbox kernel's only native code: calls that *restrict* the calling process or start a
 * child in fresh namespaces.
 *
 * Python 3.11 has no os.unshare and no way to install a seccomp filter, and loading ctypes to
 * make those calls would leave its types (raw memory and call access) in every episode process:
 * CPython cannot unload an extension, and object.__subclasses__() reaches its types. This module
 * offers nothing but restriction: a process can only take privileges away from itself with it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static PyObject *install_filter(PyObject *self, PyObject *args) {
    Py_buffer prog;
    if (!PyArg_ParseTuple(args, "y*", &prog)) {
        return NULL;
    }
    size_t n = (size_t)prog.len / sizeof(struct sock_filter);
    if (prog.len <= 0 || (size_t)prog.len % sizeof(struct sock_filter) != 0 || n > BPF_MAXINSNS) {
        PyBuffer_Release(&prog);
        PyErr_SetString(PyExc_ValueError, "not a BPF program (a non-empty array of struct sock_filter)");
        return NULL;
    }
    struct sock_fprog fprog = {.len = (unsigned short)n, .filter = (struct sock_filter *)prog.buf};
    int rc = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (rc == 0) {
        rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0);
    }
    int saved = errno;
    PyBuffer_Release(&prog);
    if (rc != 0) {
        errno = saved;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyObject *unshare_namespaces(PyObject *self, PyObject *args) {
    int flags;
    if (!PyArg_ParseTuple(args, "i", &flags)) {
        return NULL;
    }
    if (unshare(flags) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyObject *set_pdeathsig(PyObject *self, PyObject *args) {
    int sig;
    if (!PyArg_ParseTuple(args, "i", &sig)) {
        return NULL;
    }
    if (prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

/* fork() into new namespaces: clone(flags | SIGCHLD) with the interpreter's own fork hooks, so
 * the child is PID 1 of a new PID namespace (and has its own IPC namespace) in one step. */
static PyObject *fork_into(PyObject *self, PyObject *args) {
    int flags;
    if (!PyArg_ParseTuple(args, "i", &flags)) {
        return NULL;
    }
    PyOS_BeforeFork();
    long pid = syscall(SYS_clone, (unsigned long)flags | SIGCHLD, NULL, NULL, NULL, NULL);
    int saved = errno;
    if (pid == 0) {
        PyOS_AfterFork_Child();
    } else {
        PyOS_AfterFork_Parent();
    }
    if (pid < 0) {
        errno = saved;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return PyLong_FromLong(pid);
}

/* A namespace's PID 1 ignores every signal it has no handler for (SIGXCPU included): this handler
 * ends the process at once with a status that says which signal it was (128 + signal). */
static void exit_now(int sig) { _exit(128 + sig); }

static PyObject *exit_on_signal(PyObject *self, PyObject *args) {
    int sig;
    if (!PyArg_ParseTuple(args, "i", &sig)) {
        return NULL;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = exit_now;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install_filter", install_filter, METH_VARARGS,
     "install_filter(program: bytes): set no_new_privs and install a seccomp filter program."},
    {"unshare", unshare_namespaces, METH_VARARGS, "unshare(flags: int): move into new namespaces."},
    {"set_pdeathsig", set_pdeathsig, METH_VARARGS, "set_pdeathsig(sig: int): die with the parent."},
    {"fork_into", fork_into, METH_VARARGS, "fork_into(flags: int) -> pid: fork into new namespaces."},
    {"exit_on_signal", exit_on_signal, METH_VARARGS, "exit_on_signal(sig: int): exit(128 + sig) on it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gd_isolate", NULL, -1, methods};

PyMODINIT_FUNC PyInit__gd_isolate(void) { return PyModule_Create(&module); }
