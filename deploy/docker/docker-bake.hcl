# docker buildx bake -f deploy/docker/docker-bake.hcl [--push]: the pqcd image for amd64 and arm64
# as one multi-architecture image (deploy/README.md, "amd64 + arm64 in one image").
variable "TAG" {
  default = "pqcd:0.1.0"
}

group "default" {
  targets = ["pqcd"]
}

target "pqcd" {
  context    = "."
  dockerfile = "deploy/docker/Dockerfile"
  platforms  = ["linux/amd64", "linux/arm64"]
  tags       = ["${TAG}"]
}
