//! rtvirt-vm: boot minimal QEMU guests (Debian kernel + busybox initramfs) and run rtvirt
//! measurements inside them (SEEDS.md section 4 methodology).
