// Capabilities: the helper holds CAP_SYS_ADMIN, CAP_SETPCAP, CAP_DAC_READ_SEARCH and
// CAP_SYS_RESOURCE in bwrap's user namespace only (nested PID/mount namespace, fresh /proc,
// clearing the bounding set, walking the planned mounts, the sandbox's per-user limits) and drops
// everything before anything else runs.

#include "helper.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

// Empty the bounding set for this process and all it starts. It limits only what execve can
// grant, not the capabilities held now, so it goes first; it needs CAP_SETPCAP.
void drop_bounding_set(void) {
  for (int cap = 0;; cap++) {
    int present = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
    if (present < 0) {
      if (errno == EINVAL) break; // past the kernel's last capability
      die_errno("PR_CAPBSET_READ");
    }
    if (present && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EPERM)
        die("srt-init: cannot clear the capability bounding set: start it with bwrap "
            "--cap-add CAP_SETPCAP");
      die_errno("PR_CAPBSET_DROP");
    }
  }
}

// Clear the ambient, inheritable, permitted and effective sets.
void drop_capabilities(void) {
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
    die_errno("PR_CAP_AMBIENT_CLEAR_ALL");
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) != 0) die_errno("capset");
}
