"""RLDS / TFDS datasets without TensorFlow: TFRecord framing (:mod:`.tfrecord`), the
``tf.train.Example`` wire format (:mod:`.example`) and the reader (:mod:`.reader`)."""
