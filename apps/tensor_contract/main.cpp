#include "tensor.hpp"

int main(int argc, char** argv) {
  return locus::run(argc, argv, tensor_contract::app_info(), tensor_contract::run);
}
