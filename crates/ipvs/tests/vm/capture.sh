#!/bin/bash
# capture.sh - run inside ipvs-vm.sh (with --add /usr/bin/strace) to record the
# generic-netlink bytes ipvsadm exchanges with the kernel. Each step's strace
# output goes to $IPVS_VM_SHARE/<step>.trace; the codec's fixtures are cut from
# these files (see crates/ipvs/tests/fixtures/README.md).
#
#   ipvs-vm.sh --share DIR --add /usr/bin/strace crates/ipvs/tests/vm/capture.sh
set -u
out=${IPVS_VM_SHARE:-/mnt/share}
step() {
  local name=$1; shift
  strace -f -qq -e trace=sendmsg,recvmsg -xx -s 65536 -o "$out/$name.trace" "$@"
  echo "capture: $name rc=$?"
}
ipvsadm -C
step new_service_tcp     ipvsadm -A -t 10.96.10.10:80 -s rr
step new_service_persist ipvsadm -A -t 10.96.10.20:7000 -s rr -p 10800
step new_service_udp     ipvsadm -A -u 10.96.10.120:53 -s lc
step new_service_fwmark  ipvsadm -A -f 42 -s sh
step new_service_v6      ipvsadm -A -t [fd00:10:96::10]:443 -s wlc
step set_service         ipvsadm -E -t 10.96.10.10:80 -s wrr
step new_dest            ipvsadm -a -t 10.96.10.10:80 -r 10.244.0.11:8080 -m -w 1
step new_dest_thresh     ipvsadm -a -t 10.96.10.10:80 -r 10.244.1.11:8080 -m -w 3 -x 100 -y 10
step new_dest_v6         ipvsadm -a -t [fd00:10:96::10]:443 -r [fd00:10:244::5]:8443 -m -w 1
step set_dest            ipvsadm -e -t 10.96.10.10:80 -r 10.244.0.11:8080 -m -w 0
step list                ipvsadm -Ln
step err_exists          ipvsadm -A -t 10.96.10.10:80 -s rr
step err_no_service      ipvsadm -D -t 10.96.99.99:80
step del_dest            ipvsadm -d -t 10.96.10.10:80 -r 10.244.1.11:8080
step del_service         ipvsadm -D -u 10.96.10.120:53
step set_timeouts        ipvsadm --set 900 120 300
step flush               ipvsadm -C
ipvsadm -Ln
