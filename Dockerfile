# The one image of the docker-compose cluster (deploy/compose): every
# kube-lite binary, Debian's etcd, containerd, runc, CNI plugins and
# docker-registry, and the test images as OCI tarballs.
#
# Go is not compiled here: hack/compose.sh builds bin/ and the image tarballs
# on the host and stages the build context (bin/, images/, deploy/compose/,
# hack/containerd.sh).
# Where no registry is reachable it also makes the base with debootstrap
# (hack/compose-base.sh) and passes --build-arg BASE_IMAGE=kube-lite/base:bookworm.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

# The packages of deploy/compose/packages: the debootstrapped base already
# holds them; a stock Debian image gets them from apt.
COPY deploy/compose/packages /usr/local/lib/kube-lite/packages
RUN set -e; \
	pkgs=$(sed -e 's/#.*//' /usr/local/lib/kube-lite/packages); \
	[ -n "$pkgs" ]; \
	missing=""; \
	for p in $pkgs; do \
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"; \
	done; \
	if [ -n "$missing" ]; then \
		apt-get update; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing; \
		rm -rf /var/lib/apt/lists/*; \
	fi

ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
COPY images/ /opt/kube-lite/images/
COPY deploy/compose/entrypoint.sh /usr/local/lib/kube-lite/entrypoint.sh
COPY hack/containerd.sh /usr/local/lib/kube-lite/containerd.sh
COPY bin/ /usr/local/bin/
# containerd keeps its snapshots here: overlayfs cannot sit on the
# container's own overlay root.
VOLUME /var/lib/containerd
ENTRYPOINT ["/usr/local/lib/kube-lite/entrypoint.sh"]
