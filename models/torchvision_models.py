"""The zoo's torchvision models (architectures exactly as torchvision 0.26 defines them).

* inception_v3: Szegedy et al. 2016, torchvision Inception3 with aux_logits=False (the auxiliary
  classifier only matters for training), init_weights=True, transform_input=False, 299x299.
* resnet50: He et al. 2016, ResNet-50 v1.5 (stride 2 in the 3x3 conv of the bottleneck, as
  torchvision), 224x224.
* resnext50_32x4d: Xie et al. 2017, ResNeXt-50 32x4d, 224x224.
* squeezenet: Iandola et al. 2016, SqueezeNet 1.0 (7x7/96 stem conv, fire modules 2-9, max pools
  after conv1, fire4 and fire8), torchvision squeezenet1_0, 224x224. 1.0 rather than 1.1 because
  it is the layout MetaFlow/TASO and IOS benchmark.
"""
from torch import nn
from torchvision import models as tvm


def inception_v3() -> nn.Module:
    return tvm.inception_v3(weights=None, aux_logits=False, init_weights=True, transform_input=False)


def resnet50() -> nn.Module:
    return tvm.resnet50(weights=None)


def resnext50_32x4d() -> nn.Module:
    return tvm.resnext50_32x4d(weights=None)


def squeezenet() -> nn.Module:
    return tvm.squeezenet1_0(weights=None)
