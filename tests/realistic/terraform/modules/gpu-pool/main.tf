resource "null_resource" "x" {}
